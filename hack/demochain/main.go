// Command demochain is the second half of make demo: one immutable image
// digest walked through the whole chain, offline. It drives the real CLI
// (-throughline) as CI, the approvers and a forge would, on a copy of
// examples/gitops-env (a Git work repository and its bare origin on disk);
// what has no cluster here runs in process: an OCI registry on a loopback
// port (go-containerregistry's), and the notifier's own HTTP handler and
// processor, to which Argo CD's notifications are replayed.
//
// Every step prints one line; a step whose outcome is not the expected
// one stops the walk (exit 1) naming the step. The directory -out is left
// behind: its gitops/ is the repository, with origin.git its remote.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	tl := flag.String("throughline", "bin/throughline", "the throughline binary the walk runs")
	example := flag.String("example", "examples/gitops-env", "the example GitOps repository (copied, never changed)")
	out := flag.String("out", "bin/demo-chain", "the directory the walk works in and leaves behind (replaced when a previous walk made it)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, config{Throughline: *tl, Example: *example, Out: *out}, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demochain:", err)
		cancel()
		os.Exit(1)
	}
}

// config is what one walk needs.
type config struct {
	// Throughline is the CLI binary; Example the example repository;
	// Out the directory the walk makes (see marker).
	Throughline, Example, Out string
	// Now, when set, is the time the scans finished (default now).
	Now func() time.Time
}

// marker marks a directory a walk made, which the next walk may replace.
const marker = ".throughline-demo-chain"

// demo is one walk's state.
type demo struct {
	cfg    config
	out    io.Writer
	tl     func(dir string, want int, args ...string) (string, error)
	origin string // the bare repository
	work   string // the repository left behind
	home   string
	keys   *keys
	clones int
	// next is the release the walk leaves accepted in staging, not yet
	// proposed to production.
	next release
}

// stepError is a step whose outcome differs from the expected one.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// prepare makes cfg.Out afresh: absent, empty, or made by an earlier walk.
func prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("%s is not empty and not a previous walk's directory (no %s): not replacing it", dir, marker)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, marker), []byte("made by hack/demochain; the next make demo replaces this directory\n"), 0o644)
}

// gitEnv is the environment of every git and CLI command: the walk's own
// HOME (its git identity, no signing unless a clone asks for it), its
// caches, no terminal prompt.
func (d *demo) gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME" || k == "DOCKER_CONFIG" || k == "THROUGHLINE_CACHE_DIR" || strings.HasPrefix(k, "GIT_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+d.home, "DOCKER_CONFIG="+filepath.Join(d.home, ".docker"), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"THROUGHLINE_CACHE_DIR="+filepath.Join(d.cfg.Out, "cache"))
}

// git runs git in dir and returns its trimmed output.
func (d *demo) git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, d.gitEnv()
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(b)))
	}
	return strings.TrimSpace(string(b)), nil
}

// run runs the CLI in dir and returns its stdout; an exit code other than
// want is an error carrying both streams.
func (d *demo) runCLI(dir string, want int, args ...string) (stdout string, stderr string, err error) {
	cmd := exec.Command(d.cfg.Throughline, args...)
	var o, e strings.Builder
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, d.gitEnv(), &o, &e
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return "", "", err
	}
	if code != want {
		return o.String(), e.String(), fmt.Errorf("throughline %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, o.String(), e.String())
	}
	return o.String(), e.String(), nil
}

// clone is a new clone of the origin under Out/clones.
func (d *demo) clone(name string) (string, error) {
	d.clones++
	dir := filepath.Join(d.cfg.Out, "clones", fmt.Sprintf("%02d-%s", d.clones, name))
	if _, err := d.git(d.cfg.Out, "clone", "-q", d.origin, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// say prints one step's line: what happened, the ids in short form.
func (d *demo) say(step, format string, args ...any) {
	fmt.Fprintf(d.out, "%-10s %s\n", step, fmt.Sprintf(format, args...))
}

// short is the 12-digit form of a commit id or a sha256 digest.
func short(s string) string {
	if h, ok := strings.CutPrefix(s, "sha256:"); ok && len(h) >= 12 {
		return "sha256:" + h[:12]
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for _, p := range []*string{&cfg.Throughline, &cfg.Example, &cfg.Out} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if err := prepare(cfg.Out); err != nil {
		return err
	}
	d := &demo{cfg: cfg, out: out, home: filepath.Join(cfg.Out, "home")}
	d.tl = func(dir string, want int, args ...string) (string, error) {
		o, _, err := d.runCLI(dir, want, args...)
		return o, err
	}
	if err := d.setupHome(); err != nil {
		return err
	}
	return d.walk(ctx)
}

// setupHome writes the walk's git identity: the platform team commits on
// main, nothing signed unless a clone says so.
func (d *demo) setupHome() error {
	if err := os.MkdirAll(d.home, 0o700); err != nil {
		return err
	}
	cfg := "[user]\n\tname = platform-team\n\temail = platform@example.com\n[commit]\n\tgpgsign = false\n[init]\n\tdefaultBranch = main\n" +
		"[advice]\n\tdetachedHead = false\n"
	return os.WriteFile(filepath.Join(d.home, ".gitconfig"), []byte(cfg), 0o644)
}
