package render_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/sandbox"
)

// TestSandboxRefusesEscapes proves the render child's confinement without
// any library of the render: the child, confined as for a render of root,
// dials TCP, UDP and a UNIX socket, reads a file outside the root, .git's
// config, a symlink out of the tree and /proc/self/environ, and writes
// outside its TMPDIR; each must fail, and reading a file of the root and
// writing its TMPDIR must work (the sandbox is not just broken).
func TestSandboxRefusesEscapes(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources: []\n",
		".git/config":            "[remote \"origin\"]\n\turl = https://x-access-token:ghs_secret@github.com/org/repo\n",
	})
	outside := writeTree(t, map[string]string{"secret": "s3cr3t\n"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "app", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tcp.Close() }()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := tcp.Accept(); err == nil {
			accepted <- struct{}{}
			_ = c.Close()
		}
	}()
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

	attempts := render.EscapeAttempts{
		Read: []string{
			filepath.Join(root, ".git", "config"),
			filepath.Join(root, "app", "link"),
			filepath.Join(root, "out", "secret"),
			filepath.Join(outside, "secret"),
			"/proc/self/environ",
			"/etc/passwd",
		},
		Write: []string{filepath.Join(root, "app", "planted.yaml"), filepath.Join(outside, "planted")},
		Dial:  []string{"tcp " + tcp.Addr().String(), "udp " + udp.LocalAddr().String(), "unix " + filepath.Join(outside, "s.sock")},
	}
	control := render.EscapeAttempts{Read: []string{filepath.Join(root, "app", "kustomization.yaml")}}
	got, rep, err := render.ProbeSandbox(context.Background(), testWorker, root, attempts)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []sandbox.Guarantee{sandbox.Files, sandbox.TCP, sandbox.Sockets} {
		if !rep.Has(g) {
			t.Fatalf("this kernel cannot give %s (%s): the test needs Landlock ABI 4 and seccomp", g, rep)
		}
	}
	want := len(attempts.Read) + len(attempts.Write) + len(attempts.Dial)
	if len(got) != want {
		t.Errorf("the child tried %d escapes, want %d: %v", len(got), want, got)
	}
	for what, res := range got {
		if res == "" {
			t.Errorf("%s: succeeded inside the render sandbox", what)
		}
		if strings.Contains(res, "ghs_secret") || strings.Contains(res, "s3cr3t") {
			t.Errorf("%s: the outcome holds what it read: %s", what, res)
		}
	}
	select {
	case <-accepted:
		t.Error("the listener accepted a connection from the render child")
	default:
	}
	for _, p := range []string{filepath.Join(root, "app", "planted.yaml"), filepath.Join(outside, "planted")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: written by the render child (%v)", p, err)
		}
	}

	// The control: what a render needs still works in the same sandbox.
	got, _, err = render.ProbeSandbox(context.Background(), testWorker, root, control)
	if err != nil {
		t.Fatal(err)
	}
	for what, res := range got {
		if res != "" {
			t.Errorf("%s: refused in the render sandbox: %s", what, res)
		}
	}
}

// TestBudgetEndsHostileRender: a render that spends its budget is killed
// and refused with exit 4 naming the budget, in about the budget's time.
func TestBudgetEndsHostileRender(t *testing.T) {
	var deploys, kust strings.Builder
	kust.WriteString("resources:\n- deploys.yaml\npatches:\n")
	for i := range 3000 {
		fmt.Fprintf(&deploys, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d%d\n"+
			"spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: nginx\n", i)
		fmt.Fprintf(&kust, "- patch: \"{apiVersion: apps/v1, kind: Deployment, metadata: {name: d%d}, spec: {replicas: 2}}\"\n", i)
	}
	root := writeTree(t, map[string]string{"app/kustomization.yaml": kust.String(), "app/deploys.yaml": deploys.String()})
	w := *testWorker
	w.Budget = 2 * time.Second
	render.UseWorker(&w)
	defer render.UseWorker(nil)
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = app.Build(context.Background())
	took := time.Since(start)
	if !errors.Is(err, render.ErrTimeBudget) || exitcode.Code(err) != exitcode.Invalid {
		t.Fatalf("render past its budget: %v (exit %d), want ErrTimeBudget, exit 4", err, exitcode.Code(err))
	}
	// The budget is named in the message only (a measured test: no golden).
	if !strings.Contains(err.Error(), "2s") || invalidFile(t, err) != "app/kustomization.yaml" {
		t.Errorf("the refusal names neither the budget nor the kustomization: %v", err)
	}
	if took > 30*time.Second {
		t.Errorf("the render was ended after %s, with a budget of 2s", took)
	}
}
