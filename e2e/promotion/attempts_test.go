//go:build e2e

package promotion

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

// TestAttemptsAsMainMoves walks one app's production attempts against the
// real smart-HTTP server as a team does: attempt 1 is approved and checked
// after an unrelated merge on main (another app's values), merged and
// reconciled (its branch deleted on the remote); the notifier HALTs it;
// the same digest is proposed again (attempt 2, an empty overlay edit), and
// verify, approve and check run without --branch, picking attempt 2.
func TestAttemptsAsMainMoves(t *testing.T) {
	srv := testenv.StartGitServer(t, testenv.GitServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	remote, err := srv.CreateRepo(ctx, "platform/gitops-env.git")
	must(t, err)
	alice, bob := seed(t, ctx, remote)
	dir := clone(t, ctx, remote)
	run := func(args ...string) string {
		t.Helper()
		r, err := cli(ctx, dir, args...)
		must(t, err)
		if r.Code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, r.Code, r.Stdout, r.Stderr)
		}
		return r.Stdout
	}
	approve := func() {
		for _, k := range []sshkey.Key{alice, bob} {
			for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingkey", k.Private}, {"user.email", k.Principal}} {
				git(t, ctx, dir, "config", kv[0], kv[1])
			}
			if out := run("promote", "approve", "--repo", dir, "--app", "checkout", "--to", "production", "--expires", "1h"); !strings.Contains(out, "picked") {
				t.Fatalf("approve without --branch does not say which it picked:\n%s", out)
			}
		}
	}
	check := func(branch string) {
		git(t, ctx, dir, "fetch", "-q", "origin")
		run("promote", "check", "--repo", dir, "--base", "origin/main", "--head", "origin/"+branch)
	}
	first := promotion.AttemptKey{App: "checkout", Digest: newDigest, Environment: "production", Attempt: 1}.Branch()
	run("promote", "propose", "--repo", dir, "--app", "checkout", "--from", "staging", "--to", "production")
	run("promote", "verify", "--repo", dir, "--app", "checkout", "--to", "production")
	approve()

	// An unrelated merge on main after the branch was cut.
	other := clone(t, ctx, remote)
	v := filepath.Join(other, "apps/storefront/overlays/staging/values-staging.yaml")
	data, err := os.ReadFile(v)
	must(t, err)
	must(t, os.WriteFile(v, append(data, "# the storefront team's note\n"...), 0o644))
	git(t, ctx, other, "commit", "-qam", "storefront: a note")
	git(t, ctx, other, "push", "-q", "origin", "main")
	check(first)

	// Merge, reconcile: the merged branch is deleted on the remote.
	git(t, ctx, dir, "fetch", "-q", "origin")
	git(t, ctx, dir, "checkout", "-q", "main")
	git(t, ctx, dir, "merge", "-q", "--ff-only", "origin/main")
	git(t, ctx, dir, "merge", "-q", "--no-edit", "origin/"+first)
	git(t, ctx, dir, "push", "-q", "origin", "main")
	if out := run("promote", "reconcile", "--repo", dir, "--app", "checkout", "--to", "production"); !strings.Contains(out, "deleted the merged attempt branch "+first) {
		t.Fatalf("reconcile did not delete %s:\n%s", first, out)
	}
	if heads := git(t, ctx, dir, "ls-remote", "--heads", "origin"); strings.Contains(heads, first) {
		t.Fatalf("%s is still on the remote:\n%s", first, heads)
	}

	// The notifier HALTs attempt 1 (an apply-time denial at the deadline).
	git(t, ctx, dir, "pull", "-q", "--ff-only", "origin", "main")
	file := filepath.Join(dir, "promotion/checkout/production.yaml")
	data, err = os.ReadFile(file)
	must(t, err)
	rec, err := promotion.Parse("promotion/checkout/production.yaml", data)
	must(t, err)
	must(t, rec.Stop(promotion.Halted, "admission denied the Deployment until the deadline", time.Now(), "e2e"))
	data, err = rec.Marshal()
	must(t, err)
	must(t, os.WriteFile(file, data, 0o644))
	git(t, ctx, dir, "commit", "-qam", "production HALTED")
	git(t, ctx, dir, "push", "-q", "origin", "main")

	// The same digest again: attempt 2, picked without --branch.
	second := promotion.AttemptKey{App: "checkout", Digest: newDigest, Environment: "production", Attempt: 2}.Branch()
	if out := run("promote", "propose", "--repo", dir, "--app", "checkout", "--from", "staging", "--to", "production"); !strings.HasPrefix(out, "proposed checkout-production-4b7e2a91c3d5-2") {
		t.Fatalf("propose after the HALT:\n%s", out)
	}
	if out := run("promote", "verify", "--repo", dir, "--app", "checkout", "--to", "production"); !strings.Contains(out, second) {
		t.Fatalf("verify picked another branch than %s:\n%s", second, out)
	}
	approve()
	check(second)
}
