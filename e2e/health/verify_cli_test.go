//go:build e2e

package health

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestVerifyCommand runs the throughline binary's verify against the real
// API server and registry: exit 0 verified, 3 mismatch, 5 pending, 4 no
// such Acceptance; the JSON report names the match.
func TestVerifyCommand(t *testing.T) {
	root := testenv.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "throughline")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/throughline")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/throughline: %v\n%s", err, out)
	}
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	ctx := testContext(t, 3*time.Minute)
	img := pushIndex(ctx, t, reg.Host, "demo/app")
	kc, err := api.Kubeconfig("verify", "")
	must(t, err)
	cache := t.TempDir()

	w := newWorld(ctx, t, api.Client, "cli")
	arm := w.node("arm64", "linux", "arm64")
	app := ctr{name: "app", image: img.Image()}
	for _, tc := range []struct{ name, imageID string }{
		{"ok", img.Repo + "@" + img.Children["linux/arm64/v8"]},
		{"bad", img.Repo + "@" + img.Children["linux/amd64"]},
	} {
		w.acceptance(tc.name, tc.name, app)
		_, rs := w.deployment(tc.name, 1, app)
		w.kubelet(w.pod(rs, tc.name+"-1", arm), 0, map[string]string{"app": tc.imageID})
	}
	w.acceptance("pending", "pending", app)
	w.deployment("pending", 1, app)

	run := func(name string, extra ...string) (int, string, string) {
		args := append([]string{"verify", "--kubeconfig", kc, "-n", w.ns, "--acceptance", name, "--registry-cache-dir", cache}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("run %v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	code, out, stderr := run("ok", "-o", "json")
	var rep health.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("ok: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	if o := rep.Workloads[0].Containers[0].Observed[0]; rep.Reason != v1alpha1.ReasonVerified || o.Match != v1alpha1.MatchIndexChild {
		t.Fatalf("ok: %+v", rep)
	}
	code, out, stderr = run("bad")
	if code != 3 || !strings.Contains(out, "ImageMismatch") || !strings.Contains(stderr, "node is linux/arm64") {
		t.Fatalf("bad: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr = run("pending"); code != 5 || !strings.Contains(out, "RolloutInProgress") {
		t.Fatalf("pending: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr = run("pending", "--wait", "1s", "--poll-interval", "200ms"); code != 5 {
		t.Fatalf("pending --wait: exit %d\n%s", code, stderr)
	}
	if code, _, stderr = run("nothere"); code != 4 || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("nothere: exit %d\n%s", code, stderr)
	}

	// throughline serve, the binary: it writes the same verdicts into the
	// status, answers its readiness probe, and stops cleanly on SIGTERM.
	probe := closedPort(t)
	serve := exec.Command(bin, "serve", "--kubeconfig", kc, "--namespace", w.ns, "--metrics-bind-address", "0",
		"--health-probe-bind-address", probe, "--registry-cache-dir", cache, "--log-format", "json", "--pending-requeue", "1s")
	var logs bytes.Buffer
	serve.Stdout, serve.Stderr = &logs, &logs
	must(t, serve.Start())
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = serve.Process.Kill()
			<-exited //nolint:errcheck // killed: the exit error is expected
		}
		if t.Failed() {
			t.Logf("throughline serve log:\n%s", logs.String())
		}
	}()
	w.waitReason("ok", v1alpha1.ReasonVerified)
	w.waitReason("bad", v1alpha1.ReasonImageMismatch)
	w.waitReason("pending", v1alpha1.ReasonRolloutInProgress)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve /readyz not 200 within 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(t, serve.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of SIGTERM")
	}
	if !strings.Contains(logs.String(), "starting the Acceptance controller") {
		t.Fatalf("serve log lacks its start line:\n%s", logs.String())
	}
}
