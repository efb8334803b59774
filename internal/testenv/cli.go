package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/gittest"
)

// moduleRoot is the main module's directory, two levels above this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// MainWithThroughline is a TestMain body for suites that run the CLI as a
// user would: it builds ./cmd/throughline (and ./cmd/throughline-cmp, the
// plugin binary, with ./cmd/throughline-cmp-render, its in-process
// renderer) once into a temporary directory,
// stores its path in *bin, runs the tests and removes the directory.
func MainWithThroughline(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "throughline-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating a directory for the throughline binary:", err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "throughline")
	// throughline-cmp next to it: plugin.yaml's command, found on PATH.
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/throughline", "./cmd/throughline-cmp",
		"./cmd/throughline-cmp-render")
	build.Dir, build.Stdout, build.Stderr = moduleRoot(), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building throughline:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir) // a temporary directory; the exit code is what matters
	os.Exit(code)
}

// GitEnv is the environment for git and the CLI in tests: the user's
// configuration kept out (HOME=home, no system config, no prompts), a fixed
// author and committer, plus extra KEY=VALUE entries.
func GitEnv(home string, extra ...string) []string { return gittest.Env(home, extra...) }

// Git runs git in dir with env and returns its trimmed combined output,
// failing the test when git fails.
func Git(t testing.TB, ctx context.Context, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// CLIResult is what one run of the throughline binary returned.
type CLIResult struct {
	Code           int
	Stdout, Stderr string
}

// RunCLI runs bin with env and args. A non-zero exit is a result, not an
// error; the error is for a binary that could not run.
func RunCLI(ctx context.Context, bin string, env []string, args ...string) (CLIResult, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return CLIResult{ee.ExitCode(), out.String(), errb.String()}, nil
	}
	return CLIResult{0, out.String(), errb.String()}, err
}
