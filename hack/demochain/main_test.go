package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
)

// commitID is a short commit id as the walk prints it: after a space or
// an opening parenthesis (a digest follows "sha256:", a promotion id or
// a branch holds its digest after "-" or "/").
var commitID = regexp.MustCompile(`(^|[ (])[0-9a-f]{12}\b`)

var registryHost = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// TestChain walks the chain with the CLI built from this tree and compares
// its lines with testdata/chain.golden, the registry's port, the
// directory and the commit ids normalized (the image digests, the
// promotion ids and every step's outcome are not): a step whose outcome
// changes fails it, and so does a walk that stops.
func TestChain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and walks the chain (about a minute)")
	}
	needTools(t, "git", "go")
	bin := filepath.Join(t.TempDir(), "throughline")
	buildCLI(t, bin)
	out := filepath.Join(t.TempDir(), "demo")
	var lines bytes.Buffer
	if err := run(t.Context(), config{Throughline: bin, Example: filepath.Join("..", "..", "examples", "gitops-env"), Out: out}, &lines); err != nil {
		t.Fatalf("the walk stopped: %v\n%s", err, lines.String())
	}
	got := strings.ReplaceAll(lines.String(), out, "<out>")
	got = registryHost.ReplaceAllString(got, "<registry>")
	got = commitID.ReplaceAllString(got, "${1}<commit>")
	golden.Compare(t, filepath.Join("testdata", "chain.golden"), []byte(got))

	// The repository is left behind, at main's tip, with nothing to commit.
	if st, err := exec.Command("git", "-C", filepath.Join(out, "gitops"), "status", "--porcelain").CombinedOutput(); err != nil || len(st) != 0 {
		t.Errorf("the repository left behind: %v %s", err, st)
	}
}

// needTools skips t unless every tool is on PATH.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}
}

// buildCLI builds ./cmd/throughline from this tree into bin.
func buildCLI(t *testing.T, bin string) {
	t.Helper()
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/throughline-dev/throughline/cmd/throughline")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building throughline: %v\n%s", err, out)
	}
}

// TestPrepareRefusesForeignDirectory: -out is replaced only when a walk
// made it.
func TestPrepareRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepare(dir); err == nil || !strings.Contains(err.Error(), "not replacing it") {
		t.Fatalf("prepare of a foreign directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "precious")); err != nil {
		t.Fatal(err)
	}
	walked := t.TempDir()
	if err := prepare(walked); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(walked, "old"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepare(walked); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(walked, "old")); !os.IsNotExist(err) {
		t.Fatalf("a previous walk's file survived: %v", err)
	}
}
