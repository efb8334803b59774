//go:build linux

package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throughline-dev/throughline/sandbox"
)

// childEnv starts the test binary as a confined child (TestMain): it
// confines itself with the rules in the variable, then tries every escape.
const childEnv = "SANDBOX_TEST_CHILD"

// spinEnv starts the test binary as a child that confines itself to one
// second of CPU and spins (TestConfineCPULimitKills).
const spinEnv = "SANDBOX_TEST_SPIN"

func spin() {
	if _, err := sandbox.Confine(sandbox.Rules{CPU: time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for x := 0; ; x++ {
		_ = x * x
	}
}

// attempts is what the child tries after it confined itself; each entry's
// result is "" (it worked) or the error.
type attempts struct {
	Rules      sandbox.Rules
	Read       []string // files to read
	Write      []string // files to create
	List       []string // directories to list
	DialTCP    string   // host:port of a listener
	SendUDP    string   // host:port of a UDP socket
	ConnectUDS string   // a pathname UNIX socket outside the sandbox
}

type outcome struct {
	Report  sandbox.Report
	Results map[string]string
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(child(spec))
	}
	if os.Getenv(spinEnv) != "" {
		spin()
	}
	os.Exit(m.Run())
}

// child confines itself and tries what the spec asks, writing the outcome
// as JSON on stdout.
func child(spec string) int {
	var a attempts
	if err := json.Unmarshal([]byte(spec), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rep, err := sandbox.Confine(a.Rules)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	res := map[string]string{}
	try := func(key string, err error) {
		res[key] = ""
		if err != nil {
			res[key] = err.Error()
		}
	}
	for _, p := range a.Read {
		_, err := os.ReadFile(p)
		try("read "+p, err)
	}
	for _, p := range a.Write {
		try("write "+p, os.WriteFile(p, []byte("x"), 0o600))
	}
	for _, p := range a.List {
		_, err := os.ReadDir(p)
		try("list "+p, err)
	}
	if a.DialTCP != "" {
		c, err := net.Dial("tcp", a.DialTCP)
		if err == nil {
			_ = c.Close()
		}
		try("tcp", err)
	}
	if a.SendUDP != "" {
		c, err := net.Dial("udp", a.SendUDP)
		if err == nil {
			_, err = c.Write([]byte("x"))
			_ = c.Close()
		}
		try("udp", err)
	}
	if a.ConnectUDS != "" {
		c, err := net.Dial("unix", a.ConnectUDS)
		if err == nil {
			_ = c.Close()
		}
		try("unix", err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	if err == nil {
		_ = unix.Close(fd)
	}
	try("netlink", err)
	if err := json.NewEncoder(os.Stdout).Encode(outcome{Report: rep, Results: res}); err != nil {
		return 4
	}
	return 0
}

// runChild runs the test binary confined with a and returns the outcome.
func runChild(t *testing.T, a attempts) outcome {
	t.Helper()
	spec, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	var o outcome
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	return o
}

// TestConfineRefusesEscapes: a confined process reads only what it was
// given, writes only its own directory, and reaches no network, whatever
// it tries: a file outside, a symlink out of the tree, .git beside the
// tree, TCP, UDP, a UNIX socket, netlink.
func TestConfineRefusesEscapes(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	tmp := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "app", "kustomization.yaml"), "resources: []\n")
	write(filepath.Join(root, ".git", "config"), "[remote] url = https://token@example.com\n")
	write(filepath.Join(outside, "secret"), "s3cr3t\n")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "app", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "evil")); err != nil { // at the top: left out
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tcp.Close() }()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = udp.Close() }()
	uds, err := net.Listen("unix", filepath.Join(outside, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = uds.Close() }()

	readable, err := sandbox.TreeExcept(root, ".git")
	if err != nil {
		t.Fatal(err)
	}
	o := runChild(t, attempts{
		Rules: sandbox.Rules{ReadOnly: readable, ReadWrite: []string{tmp}, Memory: 1 << 30},
		Read: []string{
			filepath.Join(root, "app", "kustomization.yaml"),
			filepath.Join(root, ".git", "config"),
			filepath.Join(root, "app", "link"),
			filepath.Join(root, "evil", "secret"),
			filepath.Join(outside, "secret"),
			"/etc/hostname",
			"/proc/self/environ",
		},
		Write:      []string{filepath.Join(tmp, "ok"), filepath.Join(root, "app", "new"), filepath.Join(outside, "new")},
		List:       []string{filepath.Join(root, "app"), filepath.Join(root, ".git"), outside},
		DialTCP:    tcp.Addr().String(),
		SendUDP:    udp.LocalAddr().String(),
		ConnectUDS: filepath.Join(outside, "s.sock"),
	})
	if o.Report.LandlockABI < 4 {
		t.Skipf("this kernel has Landlock ABI %d; the test needs 4 (TCP): %s", o.Report.LandlockABI, o.Report)
	}
	allowed := map[string]bool{
		"read " + filepath.Join(root, "app", "kustomization.yaml"): true,
		"write " + filepath.Join(tmp, "ok"):                        true,
		"list " + filepath.Join(root, "app"):                       true,
	}
	for what, res := range o.Results {
		switch {
		case allowed[what] && res != "":
			t.Errorf("%s: refused in the sandbox: %s", what, res)
		case !allowed[what] && res == "":
			t.Errorf("%s: allowed in the sandbox", what)
		}
	}
	if len(o.Results) != 17 {
		t.Errorf("the child tried %d things, want 17: %v", len(o.Results), o.Results)
	}
	for _, g := range []sandbox.Guarantee{sandbox.Files, sandbox.TCP, sandbox.Sockets} {
		if !o.Report.Has(g) {
			t.Errorf("report: %s not enforced: %s", g, o.Report)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the child wrote outside its directory: %v", err)
	}
}

// TestConfineCPULimitKills: the kernel kills a confined process that spins
// past its CPU budget.
func TestConfineCPULimitKills(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), spinEnv+"=1")
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the spinning child ended with %v, want killed", err)
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the spinning child ended with %v, want SIGKILL", err)
	}
}

// TestConfineInAnotherPIDNamespace: a child that is PID 1 of a new PID
// namespace but sees the outer /proc (as under a container runtime that
// shares the host's /proc, or hack/netns-exec.sh) confines itself and goes
// on; it neither hangs in libpsx waiting for threads listed under another
// process's /proc/<pid>/task nor claims a Landlock confinement it could not
// apply. Before the fix the child hung here on every run.
func TestConfineInAnotherPIDNamespace(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("this test needs unshare(1) from util-linux: %v", err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "in"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(attempts{Rules: sandbox.Rules{ReadOnly: []string{root}}, Read: []string{filepath.Join(root, "in")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--user", "--map-root-user", "--pid", "--fork", "--kill-child", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.WaitDelay = 5 * time.Second // the child dies with unshare (--kill-child)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("the child in a new PID namespace did not finish confining itself within a minute (libpsx waiting for threads?): %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	var o outcome
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if r := o.Results["read "+filepath.Join(root, "in")]; r != "" {
		t.Errorf("the confined child could not read its own tree: %s", r)
	}
	// Landlock is either enforced for real (a build without cgo needs no
	// /proc) or reported missing with the reason; never both or neither.
	enforced := map[sandbox.Guarantee]bool{}
	for _, g := range o.Report.Enforced {
		enforced[g] = true
	}
	if enforced[sandbox.Files] == (o.Report.Missing[sandbox.Files] != "") {
		t.Errorf("report for files: enforced %v, missing %q: want exactly one", enforced[sandbox.Files], o.Report.Missing[sandbox.Files])
	}
}
