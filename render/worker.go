package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/throughline-dev/throughline/chartindex"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/sandbox"
)

// WorkerCommand is the hidden subcommand of the throughline binary that runs
// one krusty render in a child process (ServeWorker).
const WorkerCommand = "__render"

// Worker says how Build starts the child process that runs krusty: Path
// with Args, which must end in ServeWorker. The child is started per render
// under the render's context and killed (SIGKILL) when it ends, so
// --timeout and SIGTERM end a render whatever krusty is doing; it runs with
// an empty PATH (no git, no ssh), no proxy or GIT_* variables, a fresh empty
// HOME and TMPDIR, and caps its own memory (MemoryLimit).
type Worker struct {
	// Path is the executable; "" means the running one (os.Executable).
	Path string
	Args []string
	// MemoryLimit is the child's memory budget (what its Go runtime maps,
	// watchMemory; RLIMIT_DATA above it); <= 0 means DefaultMaxMemory.
	MemoryLimit int64
	// HelmPath is the executable that renders apps with Helm charts when
	// this process links no Helm engine (UseHelm): the lean plugin binary
	// names the throughline binary beside it. "" means Path.
	HelmPath string
	// Budget bounds one render's wall time (the parent kills the child's
	// process group when it is spent) and its CPU time (RLIMIT_CPU in the
	// child); a render that spends it is refused (exit 4) naming it.
	// <= 0 means DefaultBudget.
	Budget time.Duration
	// OnSandbox is called with the child's sandbox report after every
	// render: what the kernel enforced, what it could not give (a kernel
	// without Landlock, or an older ABI) and what confining cost; the
	// caller says so (a library does not log).
	OnSandbox func(sandbox.Report)
	// OnExit is called after every child that ran ends, whatever the
	// render's outcome (the resident renderer's metrics).
	OnExit func(ChildExit)
}

// ChildExit is what is known of one ended render child.
type ChildExit struct {
	// PeakRSS is the child's peak resident set in bytes as the child read
	// it (VmHWM of its own address space) when it answered; 0 when it gave
	// no answer (killed for its budget, crashed) or the platform does not
	// report it. wait4's ru_maxrss is not used: a child started by vfork
	// and exec inherits the parent's peak in it.
	PeakRSS int64
	// CPU is the child's user and system time (wait4's).
	CPU time.Duration
}

// DefaultBudget is a render's wall and CPU budget when Worker.Budget is
// not set: below Argo CD's 60 s for a whole generate (its default
// --plugin-... exec timeout), so that a hostile render ends with the
// plugin's own refusal naming the budget instead of Argo CD's timeout.
const DefaultBudget = 45 * time.Second

// ErrTimeBudget is wrapped by the refusal of a render that spent its wall
// or CPU budget (Worker.Budget).
var ErrTimeBudget = errors.New("render exceeded its time budget")

// budget is b, or DefaultBudget when b <= 0 (raceTimeScale times that in
// a race-detector build).
func budget(b time.Duration) time.Duration {
	if b <= 0 {
		return DefaultBudget * raceTimeScale
	}
	return b
}

// worker is the process-wide choice of UseWorker: nil renders in-process.
var worker atomic.Pointer[Worker]

// ActiveWorker is the worker UseWorker last chose (nil: in-process).
func ActiveWorker() *Worker { return worker.Load() }

// UseWorker makes every later Build of a kustomization run krusty in a
// child process started as w says; nil renders in-process (the package's
// own tests, which run in a test binary that cannot serve as the child).
func UseWorker(w *Worker) { worker.Store(w) }

// workerRequest is what the parent sends the child on stdin.
type workerRequest struct {
	Root        string `json:"root"`
	Path        string `json:"path"` // relative to Root
	MaxFileSize int64  `json:"maxFileSize"`
	Trace       bool   `json:"trace"`
	MemoryLimit int64  `json:"memoryLimit"`
	// Helm and Charts: a chart app's parameters and the remote chart
	// packages the parent fetched (the child fetches nothing).
	Helm   HelmOptions       `json:"helm"`
	Charts map[string][]byte `json:"charts,omitempty"`
	// CPU is the child's CPU budget (RLIMIT_CPU).
	CPU time.Duration `json:"cpu"`
	// Escape, when set, makes the child try these escapes after it
	// confined itself instead of rendering (ProbeSandbox).
	Escape *EscapeAttempts `json:"escape,omitempty"`
	// Index, when set, makes the child look a chart version up in a
	// downloaded index.yaml instead of rendering (LookupIndex): the only
	// file it may read.
	Index *indexLookup `json:"index,omitempty"`
}

// indexLookup asks for the entry of Name at Version in the index.yaml File.
type indexLookup struct {
	File    string `json:"file"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// workerResponse is what the child writes on stdout: the objects or the
// error, and the probes of its render when the request asked for them.
type workerResponse struct {
	Objects []workerObject `json:"objects,omitempty"`
	Probes  []Probe        `json:"probes,omitempty"`
	Error   *workerError   `json:"error,omitempty"`
	Secrets []string       `json:"secrets,omitempty"` // the Secret values the child read, for the parent's Redactor
	// Sandbox is what the child's confinement enforced.
	Sandbox sandbox.Report `json:"sandbox"`
	// Escaped holds the outcome of each of the request's Escape attempts.
	Escaped map[string]string `json:"escaped,omitempty"`
	// Entry is the index.yaml entry an Index request found.
	Entry *chartindex.Entry `json:"entry,omitempty"`
	// PeakRSS is the child's peak resident set in bytes (0: unknown).
	PeakRSS int64 `json:"peakRSS,omitempty"`
}

type workerObject struct {
	Object json.RawMessage `json:"object"`
	Source string          `json:"source"`
}

// workerError is an error of the child with its exit code: for invalid
// input, the file and the message of its cause, so the parent's error reads
// exactly as the in-process one.
type workerError struct {
	Code    int    `json:"code"`
	File    string `json:"file,omitempty"`
	Message string `json:"message"`
}

// ErrMemoryBudget is wrapped by the refusal of a render whose child process
// ran out of its memory budget.
var ErrMemoryBudget = errors.New("render exceeded its memory budget")

// workerWaitDelay bounds how long Build waits for the child's output after
// it exited or was killed. The timer also starts at a normal exit, while
// the parent still copies the last of a large output from the pipe: on a
// loaded machine (2 cores, -race) that took over 200 ms, and a render that
// had succeeded failed with "WaitDelay expired before I/O complete". The
// child execs nothing (empty PATH) and is killed with its process group,
// so nothing else holds the pipe: the bound only guards against a stuck
// copy, and can be generous.
const workerWaitDelay = 10 * time.Second

// renderWorker is the worker a Build of a starts, nil for in-process: the
// process-wide one, started from HelmPath for an app with charts when this
// process links no Helm engine (a HelmPath that is not there is ErrNoHelm).
func (a *App) renderWorker() (*Worker, error) {
	w := worker.Load()
	if w == nil || w.HelmPath == "" || !a.needsHelm() || linkedHelm() != nil {
		return w, nil
	}
	if _, err := os.Stat(w.HelmPath); err != nil {
		return nil, &exitcode.InvalidInput{File: a.RelDir(), Err: fmt.Errorf("%w: %s renders the charts of this app: %w", ErrNoHelm, w.HelmPath, err)}
	}
	c := *w
	c.Path = w.HelmPath
	return &c, nil
}

// buildInWorker runs krusty for the app in a child process (see Worker).
func (a *App) buildInWorker(ctx context.Context, w *Worker) ([]Object, error) {
	kfile := a.FS.Rel(findKustomizationFile(a.FS, a.Dir))
	if a.Mode == ModeHelm {
		kfile = a.FS.Rel(filepath.Join(a.Dir, "Chart.yaml"))
	}
	resp, err := runWorker(ctx, w, kfile, workerRequest{Root: a.FS.Root(), Path: a.RelDir(), MaxFileSize: a.FS.maxFileSize,
		Trace: a.FS.trace != nil, MemoryLimit: w.MemoryLimit, Helm: a.given, Charts: a.fetched})
	if err != nil {
		return nil, err
	}
	if a.FS.trace != nil {
		for _, p := range resp.Probes {
			a.FS.trace.add(p.Op, p.Path, p.Result)
		}
	}
	a.FS.secrets.add(resp.Secrets...)
	if resp.Error != nil {
		return nil, resp.Error.err()
	}
	return decodeWorkerObjects(resp.Objects)
}

// runWorker starts the child for req (what names the render in errors),
// bounded by w's budget, and returns its response.
func runWorker(ctx context.Context, w *Worker, what string, req workerRequest) (*workerResponse, error) {
	b := budget(w.Budget)
	req.CPU = b
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the render request for %s: %w", what, err)
	}
	path := w.Path
	if path == "" {
		if path, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the executable to render %s in: %w", what, err)
		}
	}
	sandboxDir, err := os.MkdirTemp("", "throughline-render-")
	if err != nil {
		return nil, fmt.Errorf("creating the render sandbox for %s: %w", what, err)
	}
	defer func() { _ = os.RemoveAll(sandboxDir) }() // best effort: a temporary directory
	env, err := workerEnv(sandboxDir)
	if err != nil {
		return nil, fmt.Errorf("creating the render sandbox for %s: %w", what, err)
	}
	bctx, cancel := context.WithTimeout(ctx, b)
	defer cancel()
	var stdout bytes.Buffer
	stderr := &headBuffer{max: 4096}
	cmd := exec.CommandContext(bctx, path, w.Args...)
	cmd.Env, cmd.Dir = env, sandboxDir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(body), &stdout, stderr
	cmd.SysProcAttr = workerSysProcAttr()
	cmd.Cancel = func() error { return killWorker(cmd.Process.Pid) }
	cmd.WaitDelay = workerWaitDelay
	runErr := cmd.Run()
	var resp workerResponse
	decodeErr := json.Unmarshal(stdout.Bytes(), &resp)
	if ps := cmd.ProcessState; ps != nil && w.OnExit != nil {
		e := ChildExit{CPU: ps.UserTime() + ps.SystemTime()}
		if runErr == nil && decodeErr == nil {
			e.PeakRSS = resp.PeakRSS
		}
		w.OnExit(e)
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("rendering %s: %w", what, cerr)
	}
	if bctx.Err() != nil || cpuSpent(cmd.ProcessState, b) {
		return nil, &exitcode.InvalidInput{File: what, Err: fmt.Errorf("%w (%s: THROUGHLINE_RENDER_BUDGET)", ErrTimeBudget, b)}
	}
	if runErr != nil || decodeErr != nil {
		return nil, workerFailure(what, memoryLimit(w.MemoryLimit), cmd.ProcessState, runErr, stderr.String())
	}
	if w.OnSandbox != nil {
		w.OnSandbox(resp.Sandbox)
	}
	return &resp, nil
}

// sysStatus is the wait status of ps (false when the child never ran).
func sysStatus(ps *os.ProcessState) (syscall.WaitStatus, bool) {
	if ps == nil {
		return 0, false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ws, ok
}

// cpuTickSlack is how far short of RLIMIT_CPU a child killed at it may
// report its CPU time.
const cpuTickSlack = 50 * time.Millisecond

// cpuSpent reports whether the child was killed by a signal after it used
// its CPU budget (the kernel's SIGKILL at RLIMIT_CPU).
func cpuSpent(ps *os.ProcessState, b time.Duration) bool {
	ws, ok := sysStatus(ps)
	if !ok || !ws.Signaled() {
		return false
	}
	// The kernel kills at the limit (whole seconds) by its own CPU clock,
	// sampled at its tick; the rusage wait4 reports for the killed child
	// was seen 10 ms short of it (1.990 s at a 2 s limit). Allow a few
	// ticks (HZ is at least 100), never a kill far from the budget.
	return ps.UserTime()+ps.SystemTime() >= b.Truncate(time.Second)-cpuTickSlack
}

// workerEnv prepares the child's environment in sandbox: PATH an empty
// directory (no git, no ssh: kustomize finds nothing to exec), HOME and
// TMPDIR empty directories removed with the sandbox, nothing of the
// parent's environment (no GIT_*, no proxy variables, no credentials).
func workerEnv(sandbox string) ([]string, error) {
	dirs := map[string]string{"PATH": "bin", "HOME": "home", "TMPDIR": "tmp"}
	env := []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"}
	env = append(env, raceEnv...)
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		d := filepath.Join(sandbox, dirs[k])
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
		env = append(env, k+"="+d)
	}
	return env, nil
}

// workerFailure is the error of a child that wrote no response: out of
// its memory budget (exit 4 naming the kustomization), or any other death
// (an internal error). The child decides the budget itself and exits with
// workerMemoryExit (watchMemory); the runtime's own reports of a refused
// allocation remain for an allocation that jumps past the watch to the
// kernel's limit.
func workerFailure(kfile string, limit int64, ps *os.ProcessState, runErr error, stderr string) error {
	// The Go runtime's "fatal error: runtime: out of memory"; a failed
	// mmap elsewhere (ENOMEM), or the race detector's "failed to allocate".
	if ps != nil && ps.ExitCode() == workerMemoryExit ||
		strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "failed to allocate") {
		return &exitcode.InvalidInput{File: kfile, Err: fmt.Errorf("%w (%d MiB)", ErrMemoryBudget, limit>>20)}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(stderr), "\n")
	if runErr == nil {
		runErr = errors.New("unreadable response")
	}
	if ws, ok := sysStatus(ps); ok && ws.Signaled() {
		// What a killed child used, so that the kill can be told from the
		// budgets (a signal with no budget spent is someone else's).
		first += fmt.Sprintf(" (CPU %s user, %s system)", ps.UserTime().Round(time.Millisecond), ps.SystemTime().Round(time.Millisecond))
	}
	return fmt.Errorf("rendering %s: render process failed: %w: %s", kfile, runErr, first)
}

// err rebuilds the child's error with its exit code.
func (e *workerError) err() error {
	switch e.Code {
	case exitcode.Invalid:
		return &exitcode.InvalidInput{File: e.File, Err: errors.New(e.Message)}
	case exitcode.Internal:
		return errors.New(e.Message)
	}
	return &codedError{code: e.Code, msg: e.Message}
}

// codedError is an error of the child with another exit code.
type codedError struct {
	code int
	msg  string
}

func (e *codedError) Error() string { return e.msg }

// ExitCode is the child's exit code.
func (e *codedError) ExitCode() int { return e.code }

// decodeWorkerObjects decodes the child's objects. Numbers are decoded as
// yaml.v3 decodes them in-process: int, else uint64, else float64, so the
// canonical JSON (the hash) and the YAML output are the same; only a float
// with an integral value (1.0e3) comes back as an int, which serializes
// the same.
func decodeWorkerObjects(in []workerObject) ([]Object, error) {
	objs := make([]Object, 0, len(in))
	for _, o := range in {
		dec := json.NewDecoder(bytes.NewReader(o.Object))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("decoding a rendered object of %s: %w", o.Source, err)
		}
		objs = append(objs, Object{Map: fromJSONNumbers(m).(map[string]any), Source: o.Source})
	}
	return objs, nil
}

func fromJSONNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = fromJSONNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = fromJSONNumbers(e)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return int(i)
		}
		if u, err := strconv.ParseUint(v.String(), 10, 64); err == nil {
			return u
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v.String()
	}
	return v
}

// ServeWorker is the child's side (WorkerCommand): it reads a request from
// in, confines itself (sandbox.Confine: Landlock read-only on the request's
// root minus .git, writes only to its TMPDIR and HOME, no network, no
// sockets, its memory and CPU budget) before it reads a byte of the
// repository, renders in-process (Open, then krusty or Helm) and writes the
// objects or the typed error to out. It returns an error only when it
// cannot read the request, confine itself or write the response.
func ServeWorker(ctx context.Context, in io.Reader, out io.Writer) error {
	var req workerRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return fmt.Errorf("reading the render request: %w", err)
	}
	// Opened before confinement, which may forbid opening it later; read
	// at the end (the kernel writes /proc files afresh on each read).
	peak := openPeakRSS()
	defer peak.close()
	rep, err := confineWorker(req)
	if err != nil {
		return err
	}
	defer watchMemory(memoryLimit(req.MemoryLimit))()
	resp := workerResponse{Sandbox: rep}
	switch {
	case req.Escape != nil:
		resp.Escaped = req.Escape.try()
	case req.Index != nil:
		e, err := chartindex.LookupFile(ctx, req.Index.File, req.Index.Name, req.Index.Version, ChildIndexSize)
		if err != nil {
			resp.Error = newWorkerError(err)
		} else {
			resp.Entry = &e
		}
	default:
		serveRender(ctx, req, &resp)
	}
	resp.PeakRSS = peak.read()
	if err := json.NewEncoder(out).Encode(&resp); err != nil {
		return fmt.Errorf("writing the render response: %w", err)
	}
	return nil
}

// confineWorker confines the child: the request's root readable except
// its .git (an index lookup: the index file alone), TMPDIR and HOME (the
// sandbox's own, workerEnv) writable.
func confineWorker(req workerRequest) (sandbox.Report, error) {
	readable := []string{}
	if req.Index != nil {
		readable = append(readable, req.Index.File)
	} else {
		var err error
		if readable, err = sandbox.TreeExcept(req.Root, ".git"); err != nil {
			return sandbox.Report{}, fmt.Errorf("confining the render: %w", err)
		}
	}
	var writable []string
	for _, k := range []string{"TMPDIR", "HOME"} {
		if d := os.Getenv(k); d != "" {
			writable = append(writable, d)
		}
	}
	limit := memoryLimit(req.MemoryLimit)
	rep, err := sandbox.Confine(sandbox.Rules{ReadOnly: readable, ReadWrite: writable,
		Memory: kernelMemoryLimit(limit) * raceMemoryScale, CPU: req.CPU})
	if err != nil {
		return rep, fmt.Errorf("confining the render (memory %d MiB, CPU %s): %w", limit>>20, req.CPU, err)
	}
	return rep, nil
}

// serveRender renders the request in the confined child into resp.
func serveRender(ctx context.Context, req workerRequest, resp *workerResponse) {
	var trace *Trace
	if req.Trace {
		trace = &Trace{}
	}
	objs, secrets, err := buildInProcess(ctx, Options{Root: req.Root, Path: req.Path, MaxFileSize: req.MaxFileSize, Trace: trace,
		Helm: req.Helm, fetched: req.Charts})
	resp.Secrets = secrets
	if trace != nil {
		resp.Probes = trace.Probes
	}
	if err != nil {
		resp.Error = newWorkerError(err)
		return
	}
	resp.Objects = make([]workerObject, 0, len(objs))
	for _, o := range objs {
		raw, err := json.Marshal(o.Map)
		if err != nil {
			resp.Objects, resp.Error = nil, newWorkerError(&exitcode.InvalidInput{File: o.Source, Err: fmt.Errorf("encoding %s: %w", o.ID(), err)})
			return
		}
		resp.Objects = append(resp.Objects, workerObject{Object: raw, Source: o.Source})
	}
}

// memoryLimit is limit, or DefaultMaxMemory when limit <= 0.
func memoryLimit(limit int64) int64 {
	if limit <= 0 {
		return DefaultMaxMemory
	}
	return limit
}

// buildInProcess opens the app (for the Secret values its messages
// redact, and the alias budget its kustomization files take) and runs
// krusty, or Helm for a chart app, in this process. The parent refused every remote entry, local
// problem and Helm chart before it started the child; the child does not
// decide again, and what the decision does not know (a field a later
// kustomize loads) meets the child's sandbox: no git, no ssh, no proxy.
func buildInProcess(ctx context.Context, opts Options) (_ []Object, secrets []string, _ error) {
	app, err := Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	defer func() { secrets = app.FS.secrets.values() }()
	app.FS.bind(ctx)
	var objs []Object
	switch app.Mode {
	case ModeKustomize:
		objs, err = app.buildKustomization(ctx)
	case ModeHelm:
		objs, err = app.buildChartApp(ctx)
	default:
		return nil, nil, &exitcode.InvalidInput{File: app.RelDir(), Err: errors.New("no kustomization or chart to render")}
	}
	if err != nil {
		return nil, nil, app.FS.secrets.redactErr(err)
	}
	return objs, nil, nil
}

// newWorkerError keeps err's exit code and, for invalid input, the file
// and the message of the outermost *exitcode.InvalidInput's cause.
func newWorkerError(err error) *workerError {
	e := &workerError{Code: exitcode.Code(err), Message: err.Error()}
	var inv *exitcode.InvalidInput
	if e.Code == exitcode.Invalid && errors.As(err, &inv) && inv.Error() == err.Error() {
		e.File, e.Message = inv.File, inv.Err.Error()
	}
	return e
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	buf bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (h *headBuffer) String() string { return h.buf.String() }

// parsePeakRSS is the VmHWM line of a /proc/<pid>/status in bytes (0 when
// absent or malformed).
func parsePeakRSS(status []byte) int64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return 0
		}
		return kb << 10
	}
	return 0
}
