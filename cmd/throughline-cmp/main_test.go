package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/internal/pluginclient"
	"github.com/throughline-dev/throughline/render"
)

const pkg = "github.com/throughline-dev/throughline/cmd/throughline-cmp"

// goTool is the go command on PATH (go test runs with its toolchain's
// bin first on PATH).
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build throughline-cmp with")
	}
	return p
}

var build struct {
	once sync.Once
	dir  string
	err  error
}

// testVersion is stamped into the binaries the tests build; it is the
// renderer in the Acceptance and part of the cache key.
const testVersion = "v0.0.0-client-test"

// binaries builds throughline-cmp, throughline-cmp-render and throughline
// into one directory once per test binary (as make build does: -trimpath,
// the version stamped) and returns it.
func binaries(t *testing.T) string {
	t.Helper()
	gobin := goTool(t)
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "throughline-cmp-test-")
		if build.err != nil {
			return
		}
		cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags", "-X main.version="+testVersion, "-o", build.dir+string(os.PathSeparator),
			pkg, pkg+"-render", "github.com/throughline-dev/throughline/cmd/throughline")
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = errors.New(string(out))
		}
	})
	if build.err != nil {
		t.Fatalf("building the binaries: %v", build.err)
	}
	return build.dir
}

// binary is the throughline-cmp the tests built, with
// throughline-cmp-render and throughline beside it.
func binary(t *testing.T) string { return filepath.Join(binaries(t), "throughline-cmp") }

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir) // best effort: a temporary directory
	}
	os.Exit(code)
}

// clientDeps are the only packages outside the standard library that the
// client may link: the socket protocol, exit codes, the resident path of
// cmp generate and its logger, the flag parser.
var clientDeps = map[string]bool{
	pkg: true,
	"github.com/throughline-dev/throughline/cmp/resident":          true,
	"github.com/throughline-dev/throughline/exitcode":              true,
	"github.com/throughline-dev/throughline/internal/pluginclient": true,
	"github.com/spf13/pflag":                                       true,
	"github.com/rs/zerolog":                                        true,
	"github.com/rs/zerolog/internal/json":                          true,
	"github.com/mattn/go-isatty":                                   true,
	"github.com/mattn/go-colorable":                                true,
	"golang.org/x/sys/unix":                                        true,
}

// TestClientImports: the binary plugin.yaml runs links the socket protocol
// and the standard library, nothing of the render path: no krusty, no
// kyaml (its OpenAPI brings protobuf and gnostic), no apimachinery (CBOR),
// no client-go. Every package outside the standard library must be one of
// clientDeps, so a new import fails here whatever it is; the forbidden
// list names the heavy ones the render path links, which fail with a
// clearer message.
func TestClientImports(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"sigs.k8s.io/kustomize", "sigs.k8s.io/yaml", "k8s.io/", "google.golang.org/protobuf", "github.com/google/gnostic",
		"github.com/fxamacker/cbor", "github.com/prometheus/", "github.com/spf13/cobra",
		"github.com/throughline-dev/throughline/render", "github.com/throughline-dev/throughline/internal/cli",
		"github.com/throughline-dev/throughline/api/",
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "vendor/") {
			continue // the standard library's vendored packages
		}
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("throughline-cmp links %s (forbidden: %s)", d, f)
			}
		}
		if !clientDeps[d] {
			t.Errorf("throughline-cmp links %s, not one of the client's packages", d)
		}
	}
}

// TestClientInitBudget: the client's package inits cost under 1 ms in all
// (GODEBUG=inittrace=1), each under 0.5 ms and 200 allocations; the render
// path's (krusty, kyaml, protobuf, CBOR) took 2.3-3.2 ms.
//
// The allocations are deterministic for one build and catch a heavy init
// however busy the machine is; the wall clock only grows when the process
// is preempted, so the clock is judged on the fastest of initRuns runs.
func TestClientInitBudget(t *testing.T) {
	const (
		initRuns        = 9
		maxTotalClockMs = 1.0
		maxInitClockMs  = 0.5
		maxInitAllocs   = 200
		maxInitBytes    = 64 << 10
	)
	bin := binary(t)
	fastest := map[string]initTrace{}
	totals := make([]float64, 0, initRuns)
	for range initRuns {
		cmd := exec.Command(bin, "version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = nil, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("throughline-cmp version: %v: %s", err, stderr.String())
		}
		traces := parseInitTrace(stderr.String())
		if len(traces) == 0 {
			t.Fatalf("no inittrace lines in %q", stderr.String())
		}
		var total float64
		for _, tr := range traces {
			total += tr.clockMs
			if f, seen := fastest[tr.pkg]; !seen || tr.clockMs < f.clockMs {
				fastest[tr.pkg] = tr
			}
		}
		totals = append(totals, total)
	}
	sort.Float64s(totals)
	if totals[0] > maxTotalClockMs {
		t.Errorf("package init %.2f ms in the fastest of %d runs, budget %.1f ms", totals[0], initRuns, maxTotalClockMs)
	}
	for p, tr := range fastest {
		if tr.clockMs > maxInitClockMs {
			t.Errorf("init %s: %.2f ms clock in the fastest of %d runs, budget %.1f ms", p, tr.clockMs, initRuns, maxInitClockMs)
		}
		if tr.allocs > maxInitAllocs || tr.bytes > maxInitBytes {
			t.Errorf("init %s: %d allocs, %d bytes; budget %d allocs, %d bytes", p, tr.allocs, tr.bytes, maxInitAllocs, maxInitBytes)
		}
	}
	t.Logf("%d package inits; total init clock per run, sorted (ms): %.2f", len(fastest), totals)
}

// TestFlagsAsRenderer: the client parses the flags throughline-cmp-render
// takes (cli.CMPGenerate's and --log-level, --log-format, --timeout), of
// the same types, so that a command line the renderer takes goes through
// the resident renderer and one it refuses goes to the renderer; the
// defaults the client sends (--max-file-size, --resident-timeout,
// --log-level, --log-format) are the renderer's, and so are the constants
// it keeps a copy of.
func TestFlagsAsRenderer(t *testing.T) {
	var o cli.CMPGenerate
	want := pflag.NewFlagSet("renderer", pflag.ContinueOnError)
	o.AddFlags(want)
	want.String("log-level", "info", "")
	want.String("log-format", "console", "")
	want.Duration("timeout", 0, "")
	got := newFlags().fs
	names := func(fs *pflag.FlagSet) map[string]string {
		m := map[string]string{}
		fs.VisitAll(func(f *pflag.Flag) { m[f.Name] = f.Value.Type() })
		return m
	}
	g, w := names(got), names(want)
	for n, typ := range w {
		if g[n] != typ {
			t.Errorf("flag --%s: the client has type %q, the renderer %q", n, g[n], typ)
		}
	}
	for n := range g {
		if _, ok := w[n]; !ok {
			t.Errorf("flag --%s: the client has it, the renderer does not", n)
		}
	}
	for _, n := range []string{"max-file-size", "resident-timeout", "log-level", "log-format", "timeout", "no-cache", "resident-dir"} {
		if gd, wd := got.Lookup(n).DefValue, want.Lookup(n).DefValue; gd != wd {
			t.Errorf("flag --%s: default %q in the client, %q in the renderer", n, gd, wd)
		}
	}
	if pluginclient.DefaultMaxFileSize != render.DefaultMaxFileSize {
		t.Errorf("pluginclient.DefaultMaxFileSize %d, render.DefaultMaxFileSize %d", pluginclient.DefaultMaxFileSize, render.DefaultMaxFileSize)
	}
	if pluginclient.EnvAppRevision != cmp.EnvAppRevision {
		t.Errorf("pluginclient.EnvAppRevision %q, cmp.EnvAppRevision %q", pluginclient.EnvAppRevision, cmp.EnvAppRevision)
	}
}

// TestFallbackArgs: after the resident renderer failed, the renderer gets
// the flags as given, the resident renderer turned off (last, so that it
// wins) and what is left of --timeout, never a longer one.
func TestFallbackArgs(t *testing.T) {
	f := newFlags()
	if err := f.fs.Parse([]string{"--no-cache", "--resident-dir", "/r", "--log-level=debug", "--max-file-size", "100",
		"--cache-dir", "/c d", "--timeout", "1h"}); err != nil {
		t.Fatal(err)
	}
	got := fallbackArgs(f, time.Now().Add(30*time.Second))
	want := []string{"generate", "--cache-dir=/c d", "--log-level=debug", "--max-file-size=100", "--no-cache=true", "--resident-dir="}
	if len(got) != len(want)+1 || strings.Join(got[:len(want)], "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("fallbackArgs = %q, want %q and the timeout", got, want)
	}
	left, err := time.ParseDuration(strings.TrimPrefix(got[len(want)], "--timeout="))
	if err != nil || left > 30*time.Second || left < 20*time.Second {
		t.Errorf("timeout argument %q: %v, want what is left of 30s", got[len(want)], err)
	}
	re := newFlags()
	if err := re.fs.Parse(got[1:]); err != nil || re.residentDir != "" || !re.noCache || re.maxFileSize != 100 {
		t.Errorf("the renderer reads %q as resident-dir %q, no-cache %v, max-file-size %d: %v",
			got, re.residentDir, re.noCache, re.maxFileSize, err)
	}
	if args := fallbackArgs(newFlags(), time.Time{}); strings.Join(args, " ") != "generate --resident-dir=" {
		t.Errorf("no flags, no timeout: %q", args)
	}
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

// TestExceptionAsAPI holds pluginclient.Exception (the thin client cannot
// link the API types) to v1alpha1.Exception's JSON: an Acceptance's
// exception with every field set reads into the client's copy and writes
// back the same, so a field added to the API is never dropped from the
// client's warning silently.
func TestExceptionAsAPI(t *testing.T) {
	t.Parallel()
	var api v1alpha1.Exception
	v := reflect.ValueOf(&api).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.String {
			t.Fatalf("v1alpha1.Exception.%s is a %s: teach pluginclient.Exception and this test", v.Type().Field(i).Name, f.Kind())
		}
		f.SetString("value of " + v.Type().Field(i).Name)
	}
	want, err := json.Marshal(api)
	if err != nil {
		t.Fatal(err)
	}
	var client pluginclient.Exception
	if err := json.Unmarshal(want, &client); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(client)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("pluginclient.Exception is not v1alpha1.Exception's JSON:\n got %s\nwant %s", got, want)
	}
}
