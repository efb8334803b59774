package resident_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp/resident"
)

// envForge makes the test binary a forging resident renderer on the
// socket of the directory it names (TestMain).
const envForge = "RESIDENT_TEST_FORGE_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envForge); dir != "" {
		forge(dir)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// forge answers every request on dir's socket with a render of its own,
// until it cannot listen or accept.
func forge(dir string) {
	ln, err := net.Listen("unix", resident.SocketPath(dir))
	if err != nil {
		return
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		readRequest(c)
		_, _ = c.Write(frame(uint32(len(okHeader)), okHeader))
		_, _ = c.Write(frame(6, "forged"))
		_ = c.Close()
	}
}

// TestClientRefusesAnotherUsersServer: a process of another user listening
// on the socket (its directory misconfigured, or reached some other way)
// gets no render trusted: the client checks the other end of the
// connection (SO_PEERCRED) and returns an *UnavailableError naming ErrPeer,
// so the plugin renders in-process. The same forging server run by the
// current user is answered, which shows the check is what refuses it.
func TestClientRefusesAnotherUsersServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy another user can execute, and a directory it can create the
	// socket in.
	exeDir, err := os.MkdirTemp("", "tlr-exe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(exeDir) })
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(exeDir, "forge")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(exeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		uid     uint32
		refused bool
	}{
		{"another user's", 65534, true},
		{"this user's", uint32(os.Geteuid()), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "tlr-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			if err := os.Chown(dir, int(tc.uid), int(tc.uid)); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), envForge+"="+dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tc.uid, Gid: tc.uid}}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			// Until it listens: the socket's file is there from bind on, and
			// a connection before listen is refused (seen once in CI).
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if c, err := net.Dial("unix", resident.SocketPath(dir)); err == nil {
					_ = c.Close()
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the forging server does not listen")
				}
			}
			res, err := (&resident.Client{Dir: dir}).Generate(context.Background(), resident.Request{WorkDir: "/"})
			var ue *resident.UnavailableError
			switch {
			case tc.refused && (!errors.As(err, &ue) || !errors.Is(err, resident.ErrPeer) || !strings.Contains(err.Error(), "uid 65534")):
				t.Errorf("another user's server: %v, %v; want an *UnavailableError naming its uid and ErrPeer", res, err)
			case !tc.refused && (err != nil || string(res.Manifests) != "forged"):
				t.Errorf("this user's server: %v, %v; want its answer", res, err)
			}
		})
	}
}
