package serve

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// exampleRepo is the seed GitOps repository of examples/.
var exampleRepo, _ = filepath.Abs(filepath.Join("..", "examples", "gitops-env"))

// TestServeDeliveryTipReadsOnly: on a clone driven by the git command
// line the metrics follow its remote-tracking branch, which the notifier's
// own fetches move, and never fetch themselves (a concurrent fetch could
// fail one of the notifier's on a locked ref).
func TestServeDeliveryTipReadsOnly(t *testing.T) {
	ctx := context.Background()
	f := chainfixture.New(t, exampleRepo)
	env, dir := testenv.GitEnv(t.TempDir()), t.TempDir()
	remote, clone := filepath.Join(dir, "remote.git"), filepath.Join(dir, "clone")
	testenv.Git(t, ctx, env, dir, "init", "-q", "--bare", "-b", "main", remote)
	testenv.Git(t, ctx, env, f.Dir, "push", "-q", remote, "HEAD~1:refs/heads/main")
	testenv.Git(t, ctx, env, dir, "clone", "-q", remote, clone)
	repo, err := (&gitRemoteFlags{}).open(ctx, clone)
	if err != nil {
		t.Fatal(err)
	}
	tip := tipOf(repo, "main", false)
	before := testenv.Git(t, ctx, env, f.Dir, "rev-parse", "HEAD~1")
	testenv.Git(t, ctx, env, f.Dir, "push", "-q", remote, "HEAD:refs/heads/main")
	if got, err := tip(ctx); err != nil || got != before {
		t.Fatalf("tip %s, %v: want the clone's %s (no fetch)", got, err, before)
	}
	testenv.Git(t, ctx, env, clone, "fetch", "-q", "origin", "refs/heads/main") // the notifier's BranchTip
	if got, err := tip(ctx); err != nil || got != testenv.Git(t, ctx, env, f.Dir, "rev-parse", "HEAD") {
		t.Fatalf("tip %s, %v: want the fetched tip", got, err)
	}
}
