package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/render"
)

const pkg = "github.com/throughline-dev/throughline/cmd/throughline-cmp-render"

// goTool is the go command on PATH (go test runs with its toolchain's
// bin first on PATH).
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build throughline-cmp-render with")
	}
	return p
}

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// testVersion is stamped into the binary the tests build; it is the
// renderer in the Acceptance and part of the cache key.
const testVersion = "v0.0.0-lean-test"

// binary builds throughline-cmp-render once per test binary (as make build does:
// -trimpath, the version stamped) and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	gobin := goTool(t)
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "throughline-cmp-render-test-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "throughline-cmp-render")
		cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags", "-X main.version="+testVersion, "-o", build.bin, pkg)
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = errors.New(string(out))
		}
	})
	if build.err != nil {
		t.Fatalf("building throughline-cmp-render: %v", build.err)
	}
	return build.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir) // best effort: a temporary directory
	}
	os.Exit(code)
}

// TestLeanImports: the plugin binary links none of what makes throughline's
// start-up slow or what a render must not reach. A careless import (cobra
// for the flags, promotion for a helper: it links the JSON Schema compiler,
// whose package init alone took 5.7 ms; anything of client-go or
// controller-runtime, whose inits register schemes and metrics) fails here
// with the chain that brought it in. go-containerregistry's remote client is
// linked for one reason: the plugin fetches the remote Helm charts a lock
// file pins, by digest, through chartsource's host-guarded transport (issue
// 18); the render itself still fetches nothing (render TestRemoteEntries...)
// and TestInitBudget holds the client's init cost.
func TestLeanImports(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"k8s.io/client-go",
		"sigs.k8s.io/controller-runtime",
		"github.com/prometheus/",
		"github.com/santhosh-tekuri/jsonschema",
		"github.com/spf13/cobra",
		"github.com/throughline-dev/throughline/promotion\n", // the package itself (policyfile is fine)
		"github.com/throughline-dev/throughline/gitops",
		"github.com/throughline-dev/throughline/gitrepo",
	}
	deps := string(out)
	for _, f := range forbidden {
		if strings.Contains(deps, f) {
			t.Errorf("throughline-cmp-render links %s", strings.TrimSpace(f))
		}
	}
	for _, d := range strings.Fields(deps) {
		if strings.Contains(strings.ToLower(d), "lua") {
			t.Errorf("throughline-cmp-render links %s (Lua)", d)
		}
	}
}

// TestInitBudget: no package init of throughline-cmp-render costs over 1 ms, the
// issue's budget for the plugin path (GODEBUG=inittrace=1).
//
// What it measures, and why it is not flaky on a loaded 2-core machine:
// inittrace prints, per package, the wall clock of its init ("ms clock")
// and the heap it allocated ("bytes", "allocs"). The allocations are
// deterministic for one build: every package init must stay under
// maxInitAllocs and maxInitBytes, which catches the heavy inits (scheme
// registration, schema compilation, metric registries: thousands of
// allocations) however busy the machine is. The wall clock only grows
// when the process is preempted, so the test runs the binary initRuns
// times and judges each package by its fastest init: a package over 1 ms
// in every run is slow, not unlucky. The total is logged, not judged.
func TestInitBudget(t *testing.T) {
	const (
		initRuns       = 7
		maxInitClockMs = 1.0
		maxInitAllocs  = 2000
		maxInitBytes   = 512 << 10
	)
	bin := binary(t)
	fastest := map[string]initTrace{}
	var order []string
	totals := make([]float64, 0, initRuns)
	for range initRuns {
		cmd := exec.Command(bin, "generate", "--help")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("throughline-cmp-render generate --help: %v: %s", err, stderr.String())
		}
		traces := parseInitTrace(stderr.String())
		if len(traces) == 0 {
			t.Fatalf("no inittrace lines in %q", stderr.String())
		}
		var total float64
		for _, tr := range traces {
			total += tr.clockMs
			f, seen := fastest[tr.pkg]
			if !seen {
				order = append(order, tr.pkg)
			}
			if !seen || tr.clockMs < f.clockMs {
				fastest[tr.pkg] = tr
			}
		}
		totals = append(totals, total)
	}
	for _, p := range order {
		tr := fastest[p]
		if tr.clockMs > maxInitClockMs {
			t.Errorf("init %s: %.2f ms clock in the fastest of %d runs, budget %.0f ms", p, tr.clockMs, initRuns, maxInitClockMs)
		}
		if tr.allocs > maxInitAllocs || tr.bytes > maxInitBytes {
			t.Errorf("init %s: %d allocs, %d bytes; budget %d allocs, %d bytes", p, tr.allocs, tr.bytes, maxInitAllocs, maxInitBytes)
		}
	}
	t.Logf("%d package inits; total init clock per run (ms, informative): %.1f", len(order), totals)
}

// TestParseInitTrace: the parser reads the runtime's inittrace format.
func TestParseInitTrace(t *testing.T) {
	in := "init runtime @0.031 ms, 0.23 ms clock, 0 bytes, 0 allocs\n" +
		"some other line\n" +
		"init github.com/santhosh-tekuri/jsonschema/v6 @4.8 ms, 17 ms clock, 1700608 bytes, 21278 allocs\n"
	got := parseInitTrace(in)
	want := []initTrace{{"runtime", 0.23, 0, 0}, {"github.com/santhosh-tekuri/jsonschema/v6", 17, 1700608, 21278}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parseInitTrace = %+v, want %+v", got, want)
	}
}

// TestSameAsThroughline: throughline-cmp-render generate prints what throughline
// cmp generate prints (the same code, cli.CMPGenerate, run here in-process
// as throughline runs it) on the example repository: the same manifests
// byte for byte, the same exit code and the same message on stderr, for a
// render, a refusal, invalid input and usage errors. The binary renders in
// a child process of itself (render.WorkerCommand): a binary that could
// not serve as its own worker fails the render cases.
func TestSameAsThroughline(t *testing.T) {
	bin := binary(t)
	repo, err := filepath.Abs("../../examples/gitops-env")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		path     string
		env      []string
		args     []string
		wantCode int
		inProc   bool // compare with cli.CMPGenerate in this process
	}{
		{name: "staging renders", path: "apps/checkout/overlays/staging",
			env: []string{"ARGOCD_APP_NAMESPACE=checkout-staging", "ARGOCD_ENV_ENVIRONMENT=staging"}, wantCode: 0, inProc: true},
		{name: "production renders with a parameter", path: "apps/checkout/overlays/production",
			env: []string{"PARAM_ENVIRONMENT=production", "PARAM_APP=checkout"}, wantCode: 0, inProc: true},
		{name: "environment parameter disagrees with the path", path: "apps/checkout/overlays/staging",
			env: []string{"ARGOCD_ENV_ENVIRONMENT=production"}, wantCode: 3, inProc: true},
		{name: "path of no environment", path: "apps/checkout/overlays/refused-unpinned", wantCode: 3, inProc: true},
		{name: "source path outside the checkout", path: "apps/checkout/overlays/staging",
			env: []string{"ARGOCD_APP_SOURCE_PATH=apps/checkout/overlays/other"}, wantCode: 4, inProc: true},
		{name: "unknown flag", path: "apps/checkout/overlays/staging", args: []string{"--no-such-flag"}, wantCode: 2},
		{name: "an argument", path: "apps/checkout/overlays/staging", args: []string{"."}, wantCode: 2},
		{name: "bad log level", path: "apps/checkout/overlays/staging", args: []string{"--log-level", "loud"}, wantCode: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(repo, filepath.FromSlash(tc.path))
			env := append([]string{"ARGOCD_APP_NAME=checkout", "ARGOCD_APP_SOURCE_PATH=" + tc.path,
				"ARGOCD_APP_REVISION=0123456789abcdef", "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/gitops.git"}, tc.env...)
			args := append([]string{"generate", "--no-cache", "--log-level", "error"}, tc.args...)
			cmd := exec.Command(bin, args...)
			cmd.Dir, cmd.Env = dir, append(append(os.Environ(), "HOME="+t.TempDir()), env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("running throughline-cmp-render: %v", err)
				}
				code = ee.ExitCode()
			}
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, stderr.String())
			}
			if code != 0 && stdout.Len() > 0 {
				t.Errorf("exit %d with output on stdout: %q", code, stdout.String())
			}
			if code == 2 && !strings.HasPrefix(stderr.String(), "usage error: ") {
				t.Errorf("usage error reads %q", stderr.String())
			}
			if !tc.inProc {
				return
			}
			wantOut, wantErr, wantCode := inProcess(t, dir, env)
			if code != wantCode || stdout.String() != wantOut || stderr.String() != wantErr {
				t.Errorf("throughline-cmp-render: exit %d\n%s\nstderr %q\nthroughline cmp generate: exit %d\n%s\nstderr %q",
					code, stdout.String(), stderr.String(), wantCode, wantOut, wantErr)
			}
		})
	}
}

// inProcess runs cli.CMPGenerate as throughline cmp generate --no-cache
// does, in dir with env (the test's environment cleared of Argo CD's
// variables first).
func inProcess(t *testing.T, dir string, env []string) (stdout, stderr string, code int) {
	for _, k := range []string{"ARGOCD_APP_NAMESPACE", "ARGOCD_ENV_ENVIRONMENT", "PARAM_ENVIRONMENT", "PARAM_APP", "KUBE_VERSION"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k) // t.Setenv restores it
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(dir)
	o := cli.CMPGenerate{NoCache: true, MaxFileSize: render.DefaultMaxFileSize}
	var out, errOut bytes.Buffer
	err := o.Run(context.Background(), zerolog.Nop(), testVersion, &out)
	code = cli.ExitCode(err, &errOut)
	if code != 0 {
		out.Reset() // throughline writes nothing on stdout on an error
	}
	return out.String(), errOut.String(), code
}

// initTrace is one line of GODEBUG=inittrace=1: a package's init.
type initTrace struct {
	pkg     string
	clockMs float64
	bytes   int64
	allocs  int64
}

// initTraceRE is the runtime's format: "init <pkg> @<start> ms, <clock> ms
// clock, <bytes> bytes, <allocs> allocs".
var initTraceRE = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes, ([0-9]+) allocs$`)

// parseInitTrace reads the inittrace lines of stderr, ignoring the others.
func parseInitTrace(stderr string) []initTrace {
	var out []initTrace
	for _, line := range strings.Split(stderr, "\n") {
		m := initTraceRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		clock, _ := strconv.ParseFloat(m[2], 64)
		b, _ := strconv.ParseInt(m[3], 10, 64)
		a, _ := strconv.ParseInt(m[4], 10, 64)
		out = append(out, initTrace{pkg: m[1], clockMs: clock, bytes: b, allocs: a})
	}
	return out
}

// diamond writes a kustomization of levels levels where each level includes
// the next twice under two name prefixes: 2^levels copies of one
// ConfigMap from about 3*levels small files (12 levels ran for a minute
// and exited 0 before renders had a budget).
func diamond(t *testing.T, levels int) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app/kustomization.yaml", "resources: [../l0]\n")
	for i := range levels {
		write(fmt.Sprintf("l%d/kustomization.yaml", i), "resources: [a, b]\n")
		for _, side := range []string{"a", "b"} {
			write(fmt.Sprintf("l%d/%s/kustomization.yaml", i, side),
				fmt.Sprintf("namePrefix: %s-\nresources: [../../l%d]\n", side, i+1))
		}
	}
	write(fmt.Sprintf("l%d/kustomization.yaml", levels), "resources: [cm.yaml]\n")
	write(fmt.Sprintf("l%d/cm.yaml", levels), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: v}\n")
	return root
}

// TestHostileRenderEndsInBudget: a render that would run for minutes ends
// at the render budget (THROUGHLINE_RENDER_BUDGET) with exit 4 naming it,
// nothing on stdout and no child left.
func TestHostileRenderEndsInBudget(t *testing.T) {
	bin := binary(t)
	root := diamond(t, 14)
	cmd := exec.Command(bin, "generate", "--no-cache")
	cmd.Dir = filepath.Join(root, "app")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "ARGOCD_APP_NAME=diamond", "ARGOCD_APP_SOURCE_PATH=app",
		"THROUGHLINE_RENDER_BUDGET=3s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("exit %v, want 4; stderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "render exceeded its time budget (3s") || !strings.Contains(stderr.String(), "app/kustomization.yaml") {
		t.Errorf("the refusal does not name the budget and the kustomization: %s", stderr.String())
	}
	if stdout.Len() > 0 {
		t.Errorf("output on stdout: %.200s", stdout.String())
	}
	if took > 30*time.Second {
		t.Errorf("ended after %s with a 3s budget", took)
	}
}
