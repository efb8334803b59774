//go:build e2e

package webview

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/promotion"
)

// TestWebViewTrueAtAGlance (issue 37): the served grid, as a platform
// engineer reads it in Chromium, on the documented path: the first
// environment's record verified by its candidacy is proven (not "chain
// broken"), a HALTED cell says why without a click, and a promotion
// waiting on its attempt branch for two approvals shows in its target
// cell with what it waits on (not "no record").
func TestWebViewTrueAtAGlance(t *testing.T) {
	ctx := browser(t)
	f := chainfixture.New(t, example)
	f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1)
	digest := "sha256:" + strings.Repeat("9d", 32)
	rec, err := promotion.NewCandidate("api", 1, promotion.Artifact{Image: "ghcr.io/throughline-dev/api:1.0.0@" + digest, Digest: digest,
		SourceCommit: strings.Repeat("9", 40)},
		promotion.Target{Environment: "production", Path: "apps/api/overlays/production", Cluster: "prod-eu-1",
			RenderedHash: "sha256:" + strings.Repeat("9", 64), BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"},
		f.Next(), "throughline promote propose")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.FromDev(rec, f.Next()); err != nil {
		t.Fatal(err)
	}
	if err := rec.AddApproval("alice@example.com", rec.InputFor("v0.1.0"), f.Next().Add(48*time.Hour), f.Next(), 2); err != nil {
		t.Fatal(err)
	}
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	branch := promotion.AttemptKey{App: "api", Digest: digest, Environment: "production", Attempt: 1}.Branch()
	f.Git("checkout", "-q", "-b", branch)
	f.Commit("api VERIFIED in production, approved by alice", map[string][]byte{promotion.RecordPath("api", "production"): data})
	f.Git("checkout", "-q", "main")

	base := serve(t, f)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("grid: %v", err)
	}
	grid := text(t, ctx, "table.grid")
	for _, want := range []string{
		"checkout ACCEPTED 1.5.0 sha256:4b7e2a91c3d5", // dev, verified by its candidacy
		"halted: Pod web-5f7c9d8b6-x2k4p (container api) runs imageID",
		"in flight on " + branch + ": VERIFIED 1.0.0 sha256:9d9d9d9d9d9d, waits on approvals: 1 of 2",
	} {
		if !strings.Contains(grid, want) {
			t.Errorf("grid: no %q in the visible text:\n%s", want, grid)
		}
	}
	dev := text(t, ctx, `a[href="promotion/checkout-dev-4b7e2a91c3d5-1.html"]`)
	if dev != "chain proven: 9/9 proven" {
		t.Errorf("checkout in dev, verified by its candidacy: %q, want chain proven: 9/9 proven", dev)
	}
	api := text(t, ctx, "table.grid tbody tr:first-child")
	if !strings.HasPrefix(api, "api no record no record in flight") {
		t.Errorf("api's row: %q, want its production cell in flight", api)
	}
}
