package breakglass

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/render"
)

// TestProposeWritebackRefreshesCommittedAcceptance: in the Flux setup the
// overlay commits its Acceptance; the write-back commit refreshes it for
// the render with the patches, so the write-back PR passes
// render --check-acceptance (found by e2e/fluxcontrol: the committed
// Acceptance was left stale).
func TestProposeWritebackRefreshesCommittedAcceptance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const p = "apps/web/overlays/production"
	// The committed Acceptance of the overlay as render --write-acceptance writes it.
	r0, src0 := gitopsRepo(t, webFiles)
	tree0, err := r0.Tree(ctx, src0)
	if err != nil {
		t.Fatal(err)
	}
	d0, err := tree0.Declare(ctx, p, "production", "test")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := acceptance.FileContent(d0.Acceptance, p)
	_ = tree0.Close()
	if err != nil {
		t.Fatal(err)
	}
	files := maps.Clone(webFiles)
	files[p+"/"+acceptance.File] = string(committed)
	files[p+"/kustomization.yaml"] += "  - " + acceptance.File + "\n"
	r, src := gitopsRepo(t, files)

	opts := WritebackOptions{Base: src, Path: p, Renderer: "test",
		Compare: Compare{ControllerManagers: DefaultControllerManagers, OtherWriters: DefaultOtherWriters, Temporary: DefaultTemporary}}
	res, err := ProposeWriteback(ctx, r, pausedRecord(src), opts, func(_ context.Context, _ []render.Object) (*Live, error) {
		id := render.ID{Group: "apps", Kind: "Deployment", Namespace: "web-production", Name: "web"}
		return &Live{Objects: map[render.ID]map[string]any{id: fromJSON(t, liveProduction)}, Tracked: []render.ID{id}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := r.Tree(ctx, res.Commit)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tree.Close() }()
	d, err := tree.Declare(ctx, p, "production", "test")
	if err != nil {
		t.Fatal(err)
	}
	if why := d.Stale(); why != "" {
		t.Fatalf("the write-back commit's committed Acceptance is stale: %s", why)
	}
	if d.Hash == d0.Hash || !strings.Contains(string(mustRead(t, r, res.Commit, p+"/"+acceptance.File)), d.Hash) {
		t.Fatalf("the write-back did not change the rendered hash %s, or the committed Acceptance does not name it", d.Hash)
	}
}

func mustRead(t *testing.T, r interface {
	ReadFile(context.Context, string, string) ([]byte, error)
}, rev, file string) []byte {
	t.Helper()
	data, err := r.ReadFile(context.Background(), rev, file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
