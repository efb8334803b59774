// Package gittest builds the Git repositories unit tests work on: one way to
// run git with the user's configuration kept out, to write files and to
// commit them. For tests only; it imports nothing but the standard library.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env is git's environment in tests: HOME=home, no system configuration, no
// prompts, a fixed author and committer, plus extra KEY=VALUE entries.
func Env(home string, extra ...string) []string {
	env := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	return append(env, extra...)
}

// Run runs git in dir (which is also its HOME) and returns its trimmed
// combined output, failing the test when git fails.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, Env(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Init makes dir a new repository on branch main.
func Init(t testing.TB, dir string) {
	t.Helper()
	Run(t, dir, "init", "-q", "-b", "main")
}

// Write writes files (slash path relative to dir -> content), making their
// directories. An empty content is written as an empty file.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatalf("writing %s: %v", p, err)
		}
		if err := os.WriteFile(abs, []byte(s), 0o644); err != nil {
			t.Fatalf("writing %s: %v", p, err)
		}
	}
}

// Replace replaces the one occurrence of old by replacement in the file at p (slash path
// relative to dir), failing the test when old is not there exactly once.
func Replace(t testing.TB, dir, p, old, replacement string) {
	t.Helper()
	abs := filepath.Join(dir, filepath.FromSlash(p))
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatalf("replacing in %s: %v", p, err)
	}
	if n := strings.Count(string(b), old); n != 1 {
		t.Fatalf("replacing in %s: %q occurs %d times, want 1", p, old, n)
	}
	if err := os.WriteFile(abs, []byte(strings.Replace(string(b), old, replacement, 1)), 0o644); err != nil {
		t.Fatalf("replacing in %s: %v", p, err)
	}
}

// Commit writes files into dir, stages everything and commits it with msg
// (an empty commit when nothing changed). It returns the new commit's id.
func Commit(t testing.TB, dir, msg string, files map[string]string) string {
	t.Helper()
	Write(t, dir, files)
	Run(t, dir, "add", "-A")
	Run(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
	return Run(t, dir, "rev-parse", "HEAD")
}

// New is a new repository in a temporary directory with files committed on
// main; it returns the directory and the commit.
func New(t testing.TB, files map[string]string) (dir, commit string) {
	t.Helper()
	dir = t.TempDir()
	Init(t, dir)
	return dir, Commit(t, dir, "initial", files)
}
