//go:build e2e

package argocdcontrol

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// tagDrift is experiment 2: CI sets staging (at B, experiment 1) to a tag
// of the suite's registry (CNCF distribution) and resolves it (throughline drift record);
// the tag then moves (a second image pushed under it). Every gate refuses
// before a controller can see the change: pin --check refuses the
// tag-only commit, drift check refuses the recorded resolution (the tag
// now resolves elsewhere), and pin's own resolution is not the recorded
// one. The change lives on a branch only; staging's Application, refreshed,
// stays at its revision with the same live objects.
func (e *env) tagDrift(run chainRun) {
	ref := run.repo + ":1.6.0"
	opt := []remote.Option{remote.WithContext(e.ctx), remote.WithAuth(authn.Anonymous)}
	isolated := run.isolated
	before := e.freeze()

	first := testenv.MultiArchIndex(e.t)
	first.Push(e.ctx, e.t, ref, opt...)
	dir := e.clone()
	const branch = "ci-staging-1.6.0"
	e.in(dir, "checkout", "-q", "-b", branch)
	// CI: staging by tag, and the tag's resolution recorded.
	kz := filepath.Join(dir, filepath.FromSlash(stagingKz))
	b, err := os.ReadFile(kz)
	must(e.t, err)
	k := strings.Replace(string(b), `"1.5.0@`+run.b+`"`, `"1.6.0"`, 1)
	if k == string(b) {
		e.t.Fatalf("%s does not pin B:\n%s", stagingKz, b)
	}
	must(e.t, os.WriteFile(kz, []byte(k), 0o644))
	rec := filepath.Join(dir, "drift", "staging-checkout-1.6.0.json")
	must(e.t, os.MkdirAll(filepath.Dir(rec), 0o755))
	if r := e.cli(isolated, "drift", "record", ref, "--out", rec); r.Code != 0 || !strings.Contains(r.Stdout, first.Digest) {
		e.t.Fatalf("arrow tag -> first resolution: drift record exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.in(dir, "add", "-A")
	e.in(dir, "commit", "-q", "-m", "ci: checkout 1.6.0 in staging (by tag)")
	e.in(dir, "push", "-q", "origin", branch)

	// The tag moves.
	second := testenv.MultiArchIndex(e.t)
	second.Push(e.ctx, e.t, ref, opt...)
	if second.Digest == first.Digest {
		e.t.Fatal("the second push has the first's digest")
	}

	if r := e.cli(isolated, "pin", "--check", "--root", dir, filepath.Join(dir, filepath.FromSlash(stagingPath))); r.Code != 3 || !strings.Contains(r.Stdout+r.Stderr, ref) {
		e.t.Fatalf("arrow tag-only commit -> pin --check refuses naming %s: exit %d\n%s%s", ref, r.Code, r.Stdout, r.Stderr)
	}
	want := "REJECTED tag " + ref + " resolved to " + first.Digest + " and " + second.Digest
	if r := e.cli(isolated, "drift", "check", rec); r.Code != 3 || !strings.Contains(r.Stderr, want) {
		e.t.Fatalf("arrow moved tag -> drift check refuses: exit %d, want 3 and %q\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
	// A pin now would take the second image: not what was recorded.
	if r := e.cli(isolated, "pin", "--root", dir, filepath.Join(dir, filepath.FromSlash(stagingPath))); r.Code != 0 {
		e.t.Fatalf("pin against the registry: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if b, err := os.ReadFile(kz); err != nil || !strings.Contains(string(b), second.Digest) || strings.Contains(string(b), first.Digest) {
		e.t.Fatalf("arrow moved tag -> pin resolves the second image %s: %v\n%s", second.Digest, err, b)
	}
	e.unchanged("refused tag -> staging Application and live objects unchanged", before)
	e.t.Logf("tag %s moved %s -> %s: refused on branch %s; staging still at %.12s", ref, short(first.Digest), short(second.Digest), branch, before.revision)
}
