package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SSHGitServer is OpenSSH's sshd on 127.0.0.1 serving Git over SSH
// (git-upload-pack and git-receive-pack run by the login shell), with one
// authorized client key.
type SSHGitServer struct {
	// Host is 127.0.0.1:port.
	Host string
	// User is the login user (the one running the test).
	User string
	// ClientKey is the PEM private key sshd authorizes; OtherKey one it
	// does not.
	ClientKey, OtherKey []byte
	// KnownHosts is a known_hosts file holding the server's host key;
	// WrongKnownHosts names the same host with another key.
	KnownHosts, WrongKnownHosts string
}

// URL is the ssh:// URL of the repository at the absolute path dir.
func (s *SSHGitServer) URL(dir string) string {
	return "ssh://" + s.User + "@" + s.Host + dir
}

// StartSSHGitServer starts sshd (Debian's openssh-server) with its own
// config, host key and authorized_keys in a temporary directory, listening
// on a free loopback port, public keys only, and stops it when the test ends.
func StartSSHGitServer(t testing.TB) *SSHGitServer {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	if !isExecutable(sshd) {
		missing(t, "sshd not found at "+sshd, "apt-get install -y openssh-server")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("ssh git server: current user: %v", err)
	}
	dir := t.TempDir()
	keygen := func(name string) (private []byte, public string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %s: %v: %s", name, err, out)
		}
		priv, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := os.ReadFile(p + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		return priv, strings.TrimSpace(string(pub))
	}
	_, hostPub := keygen("host_key")
	_, otherHostPub := keygen("other_host_key")
	client, clientPub := keygen("client_key")
	other, _ := keygen("other_key")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s := &SSHGitServer{Host: "127.0.0.1:" + strconv.Itoa(port), User: u.Username, ClientKey: client, OtherKey: other,
		KnownHosts: filepath.Join(dir, "known_hosts"), WrongKnownHosts: filepath.Join(dir, "wrong_known_hosts")}
	files := map[string]string{
		"authorized_keys":   "restrict " + clientPub + "\n",
		"known_hosts":       fmt.Sprintf("[127.0.0.1]:%d %s\n", port, hostPub),
		"wrong_known_hosts": fmt.Sprintf("[127.0.0.1]:%d %s\n", port, otherHostPub),
		"sshd_config": strings.Join([]string{
			"Port " + strconv.Itoa(port), "ListenAddress 127.0.0.1",
			"HostKey " + filepath.Join(dir, "host_key"),
			"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
			"PidFile " + filepath.Join(dir, "sshd.pid"),
			"PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
			"UsePAM no", "PermitRootLogin prohibit-password", "StrictModes no", "LogLevel VERBOSE", "",
		}, "\n"),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		// sshd running as root chroots its unprivileged child here (the
		// openssh-server package's service creates it at boot).
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshd privilege separation directory: %v", err)
		}
	}
	logs := &syncBuffer{}
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("sshd log (last %d lines):\n%s", logTailLines, logs.tail())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.Host)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("sshd exited at start:\n%s", logs.tail())
		case <-ctx.Done():
			t.Fatalf("sshd did not listen on %s within 10s:\n%s", s.Host, logs.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("sshd (Git over SSH) at %s, user %s", s.Host, s.User)
	return s
}
