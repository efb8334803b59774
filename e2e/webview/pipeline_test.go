//go:build e2e

package webview

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

// TestWebViewPipeline (issue 37): from the grid, an app's name leads to
// its pipeline, as Kargo users read one: the environments left to right
// in promotion order, each with its state, tag and digest, and between
// them how the digest moved (promoted from the stage before, or not yet).
// No script runs (the pages have none; the CSP forbids it).
func TestWebViewPipeline(t *testing.T) {
	ctx := browser(t)
	f := chainfixture.New(t, example)
	base := serve(t, f)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("grid: %v", err)
	}
	follow(t, ctx, `a[href="app/checkout.html"]`, "ol.pipeline")
	short := chainfixture.Checkout[:len("sha256:")+12]
	got := text(t, ctx, "ol.pipeline")
	want := "dev no record → " + short + " came from elsewhere (dev has no record) staging ACCEPTED 1.5.0 " + short +
		" checkout-staging-4b7e2a91c3d5-1 chain broken not proven: dev desired commit: dddddddddddd is not a commit in the history of " +
		f.Git("rev-parse", "--short=12", "main") + // the story's dev claim names no dev record: staging's chain says so
		" → " + short + " promoted from staging production ACCEPTED 1.5.0 " + short +
		" " + accepted + " chain proven"
	if got != want {
		t.Errorf("pipeline:\n got %q\nwant %q", got, want)
	}
	// Left to right: each stage starts right of the one before.
	xs, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](
		`[...document.querySelectorAll("ol.pipeline li.stage")].map(e => e.getBoundingClientRect().left)`))
	if err != nil || len(xs) != 3 || !(xs[0] < xs[1] && xs[1] < xs[2]) {
		t.Errorf("stages at x %v (%v), want three, left to right", xs, err)
	}
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.scripts.length`))
	if err != nil || scripts != 0 {
		t.Errorf("%d scripts on the page (%v), want none", scripts, err)
	}
	a11y(t, ctx, "checkout's pipeline")
	follow(t, ctx, `ol.pipeline a[href="../promotion/`+accepted+`.html"]`, "#arrow-9")
	if !strings.Contains(text(t, ctx, "h1"), accepted) {
		t.Errorf("the pipeline's link does not lead to %s", accepted)
	}
	screenshot(t, ctx, "pipeline.png", false)
}
