//go:build e2e

package fluxcontrol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tagDrift is experiment 2: CI builds checkout 1.6.0 and records what the
// tag resolved to (drift record); the tag moves (another image pushed
// under it, on the real registry); CI's pin of staging resolves the tag
// again, to the second image, and records that. The PR carries both
// records: the PR job's drift check refuses it naming both digests, the
// branch is never merged, and staging's Kustomization and live objects do
// not change.
func (l *lab) tagDrift(t *testing.T) {
	l.tip()
	ref := l.repo + ":1.6.0"
	first := l.push("1.6.0")
	branch := "pr-staging-1.6.0"
	l.g.git("checkout", "-q", "-B", branch, "origin/main")
	must(t, os.MkdirAll(filepath.Join(l.g.dir, "drift"), 0o755))
	if r := l.run("drift", "record", ref, "--out", filepath.Join(l.g.dir, "drift", "checkout-1.6.0-build.json")); r.Code != 0 || !strings.Contains(r.Stdout, first) {
		t.Fatalf("arrow build -> drift record: exit %d, want %s: %s%s", r.Code, first, r.Stdout, r.Stderr)
	}
	second := l.push("1.6.0") // the tag moves
	l.g.replace(filepath.Join(stagingEnv.overlay, "kustomization.yaml"), `newTag: "1.4.2@`+l.a+`"`, `newTag: "1.6.0"`)
	if r := l.run("pin", "--root", l.g.dir, filepath.Join(l.g.dir, stagingEnv.overlay)); r.Code != 0 {
		t.Fatalf("arrow tag -> pin: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	k, err := os.ReadFile(filepath.Join(l.g.dir, stagingEnv.overlay, "kustomization.yaml"))
	must(t, err)
	if !strings.Contains(string(k), `1.6.0@`+second) {
		t.Fatalf("arrow moved tag -> pin: the overlay does not pin the second image %s:\n%s", second, k)
	}
	if r := l.run("drift", "record", ref, "--out", filepath.Join(l.g.dir, "drift", "checkout-1.6.0-pin.json")); r.Code != 0 {
		t.Fatalf("arrow pin -> drift record: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := l.run("render", "--root", l.g.dir, "--write-acceptance", filepath.Join(l.g.dir, stagingEnv.overlay)); r.Code != 0 {
		t.Fatalf("render --write-acceptance: exit %d: %s", r.Code, r.Stderr)
	}
	pr := l.g.commit("ci: checkout 1.6.0 in staging")
	l.g.git("push", "-q", "origin", branch)
	want := "REJECTED tag " + ref + " resolved to " + first + " and " + second
	for _, args := range [][]string{{"drift", "check", "--offline"}, {"drift", "check"}} {
		records, err := filepath.Glob(filepath.Join(l.g.dir, "drift", "*.json"))
		must(t, err)
		r := l.run(append(args, records...)...)
		if r.Code != 3 || !strings.Contains(r.Stderr, want) {
			t.Fatalf("arrow moved tag -> PR job refuses (%s): exit %d, want 3 saying %q: %s%s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
		}
	}
	l.g.git("checkout", "-q", "main")

	// Flux never sees the refused commit.
	before := l.ks(stagingEnv)
	at := l.reconcileNow(srcAPI, "GitRepository", "gitops-env")
	eventually(l.ctx, t, time.Minute, "arrow GitRepository handled the reconcile request", func() string {
		u, why := get(l.ctx, l.c, srcAPI, "GitRepository", fluxNS, "gitops-env")
		if why != "" {
			return why
		}
		if got := nested(u, "status", "lastHandledReconcileAt"); got != at {
			return "lastHandledReconcileAt " + got
		}
		if rev := nested(u, "status", "artifact", "revision"); strings.HasSuffix(rev, pr) {
			t.Fatalf("arrow refused PR -> source: GitRepository fetched the refused commit %s", rev)
		}
		return ""
	})
	after := l.ks(stagingEnv)
	if a, b := nested(before, "status", "lastAppliedRevision"), nested(after, "status", "lastAppliedRevision"); a != b || strings.HasSuffix(b, pr) {
		t.Fatalf("arrow refused PR -> staging unchanged: lastAppliedRevision %s -> %s (refused %s)", a, b, pr)
	}
	dep, why := get(l.ctx, l.c, "apps/v1", "Deployment", stagingEnv.ns, "checkout")
	if why != "" {
		t.Fatal(why)
	}
	if img := l.image(dep); !strings.HasSuffix(img, "@"+l.a) {
		t.Fatalf("arrow refused PR -> staging unchanged: live image %s, want A %s", img, l.a)
	}
}
