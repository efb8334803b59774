//go:build e2e

package fluxcontrol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// directoryCopy is experiment 3: a PR copies staging's overlay over
// production's. The PR checks (throughline check, promote check) refuse it
// naming the boundary fields; the branch is pushed, never merged, and after
// a reconcile request production's Kustomization, Deployment and
// Acceptance are as they were.
func (l *lab) directoryCopy(t *testing.T) {
	l.tip()
	before := l.ks(productionEnv)
	depBefore, why := get(l.ctx, l.c, "apps/v1", "Deployment", productionEnv.ns, "checkout")
	if why != "" {
		t.Fatal(why)
	}
	branch := "pr-copy-staging-to-production"
	l.g.git("checkout", "-q", "-B", branch, "origin/main")
	for _, f := range []string{"kustomization.yaml", "environment.yaml", "throughline-acceptance.yaml"} {
		b, err := os.ReadFile(filepath.Join(l.g.dir, stagingEnv.overlay, f))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(l.g.dir, productionEnv.overlay, f), b, 0o644))
	}
	pr := l.g.commit("copy staging's overlay over production's")
	l.g.git("push", "-q", "origin", branch)
	for _, args := range [][]string{
		{"check", "--repo", l.g.dir, "--base", "origin/main", "--head", branch},
		{"promote", "check", "--repo", l.g.dir, "--base", "origin/main", "--head", branch},
	} {
		r := l.run(args...)
		out := r.Stdout + r.Stderr
		if r.Code != 3 || !strings.Contains(out, "boundary") || !strings.Contains(out, "metadata.namespace") ||
			!strings.Contains(out, productionEnv.ns) {
			t.Fatalf("arrow PR check refuses the copy (%s): exit %d, want 3 naming the boundary field metadata.namespace:\n%s",
				strings.Join(args[:2], " "), r.Code, out)
		}
		t.Logf("%s %s refuses %.12s:\n%s", args[0], args[1], pr, out)
	}
	l.g.git("checkout", "-q", "main")

	// Flux never sees it: main is unchanged, and production too.
	at := l.reconcileNow(ksAPI, "Kustomization", productionEnv.ns)
	eventually(l.ctx, t, time.Minute, "arrow production Kustomization handled the reconcile request", func() string {
		if got := nested(l.ks(productionEnv), "status", "lastHandledReconcileAt"); got != at {
			return "lastHandledReconcileAt " + got
		}
		return ""
	})
	after := l.ks(productionEnv)
	if a, b := nested(before, "status", "lastAppliedRevision"), nested(after, "status", "lastAppliedRevision"); a != b {
		t.Fatalf("arrow refused PR -> production unchanged: lastAppliedRevision %s -> %s", a, b)
	}
	depAfter, why := get(l.ctx, l.c, "apps/v1", "Deployment", productionEnv.ns, "checkout")
	if why != "" {
		t.Fatal(why)
	}
	if depAfter.GetGeneration() != depBefore.GetGeneration() {
		t.Fatalf("arrow refused PR -> production unchanged: Deployment generation %d -> %d", depBefore.GetGeneration(), depAfter.GetGeneration())
	}
	if _, why := get(l.ctx, l.c, "apps/v1", "Deployment", stagingEnv.ns, "checkout"); why != "" {
		t.Fatal(why)
	}
}
