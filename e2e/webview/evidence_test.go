//go:build e2e

package webview

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

// TestWebViewEvidence (issue 37): the promotion page shows the evidence
// the record rests on, as a reader sees it in Chromium: each runtime
// check of the source acceptance and of the target with its query,
// threshold, value and verdict, the soak, and the evidence file with the
// commit it was read at; for a record verified by its candidacy, each
// supply-chain bundle with its kind, signer, the image digest it was
// verified for and the candidate commit that sealed it. The pages pass
// the accessibility checks (a11y) and the keyboard reaches the links.
func TestWebViewEvidence(t *testing.T) {
	ctx := browser(t)
	f := chainfixture.New(t, example)
	dev := f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1).Record.PromotionID
	base := serve(t, f)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/promotion/"+accepted+".html")); err != nil {
		t.Fatalf("promotion page: %v", err)
	}
	checks := text(t, ctx, "#runtime-checks + section")
	for _, want := range []string{
		"staging (source) proven every check apps/checkout/overlays/staging/throughline-checks.yaml declares at",
		"evidence file evidence/staging/checkout/checkout-staging-4b7e2a91c3d5-1.json at",
		"soak 10m0s declared, started 2026-11-20 09:49 UTC, verified 2026-11-20 09:59 UTC: lasted 10m0s",
		`error-ratio prometheus sum(rate(http_requests_total{namespace="checkout-staging",job="checkout",code=~"5.."}[5m]))`,
		"< 0.01 0.001 Passed 2026-11-20 09:59 UTC",
	} {
		if !strings.Contains(checks, want) {
			t.Errorf("source checks: no %q in the visible text:\n%s", want, checks)
		}
	}
	target := text(t, ctx, "#checks-target")
	for _, want := range []string{"production (target) proven", "soak 30m0s declared", "lasted 30m0s", "< 0.005 0.001 Passed"} {
		if !strings.Contains(target, want) {
			t.Errorf("target checks: no %q in the visible text:\n%s", want, target)
		}
	}
	// The commit the evidence was read at links to the forge.
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#checks-target dd a").href`))
	if err != nil || !strings.HasPrefix(href, "https://forge.example/gitops/commit/") {
		t.Errorf("the evidence commit links to %q (%v), want the forge's commit page", href, err)
	}
	a11y(t, ctx, accepted)
	screenshot(t, ctx, "promotion-evidence.png", false)

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/promotion/"+dev+".html")); err != nil {
		t.Fatalf("candidacy page: %v", err)
	}
	sealed := f.Git("log", "--format=%h", "--abbrev=12", "--grep", "Promotion: "+dev, "main")
	bundles := text(t, ctx, "table.bundles")
	for _, want := range []string{
		"kind signer subject digest bundle digest in Git verdict",
		"signature keys/ci.pub " + chainfixture.Checkout + " sha256:" + strings.Repeat("5a", 32) + " promotion/checkout/dev.yaml, sealed at " +
			sealed + " proven",
		"provenance https://slsa.dev/provenance/v1 keys/ci.pub",
		"vulnerability-scan https://in-toto.io/attestation/vulns/v0.2 scanned 3h0m before candidacy, worst: HIGH (2 of 5 findings) keys/ci.pub",
	} {
		if !strings.Contains(bundles, want) {
			t.Errorf("bundles: no %q in the visible text:\n%s", want, bundles)
		}
	}
	if s := text(t, ctx, "#checks-target h4"); s != "dev (target) none" {
		t.Errorf("dev's checks: %q, want none declared", s)
	}
	a11y(t, ctx, dev)

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("grid: %v", err)
	}
	a11y(t, ctx, "the grid")
	// The keyboard: the first Tab reaches the site link, Enter follows
	// it.
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
		t.Fatalf("pressing Tab: %v", err)
	}
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.textContent`))
	if err != nil || focused != "throughline: the chain" {
		t.Errorf("the first Tab focuses %q (%v), want the site link", focused, err)
	}
}

// a11yScript lists what a screen or keyboard user would miss on the page:
// a missing language, not one h1, a skipped heading level, a table
// without a caption or a header cell without a scope, a link without
// text, a positive tabindex (focus out of document order), an
// aria-labelledby naming no element, an id used twice.
const a11yScript = `(() => {
  const bad = [];
  if (!document.documentElement.lang) bad.push("html has no lang");
  if (document.querySelectorAll("h1").length !== 1) bad.push("not one h1");
  let level = 0;
  for (const h of document.querySelectorAll("h1,h2,h3,h4,h5,h6")) {
    const l = +h.tagName[1];
    if (l > level + 1) bad.push("heading " + h.tagName + " " + JSON.stringify(h.textContent.trim()) + " skips a level");
    level = l;
  }
  for (const t of document.querySelectorAll("table")) if (!t.querySelector("caption")) bad.push("a table without caption");
  for (const th of document.querySelectorAll("th")) if (!th.getAttribute("scope")) bad.push("th without scope: " + th.textContent.trim());
  for (const a of document.querySelectorAll("a")) if (!a.textContent.trim() && !a.getAttribute("aria-label")) bad.push("a link without text: " + a.href);
  for (const e of document.querySelectorAll("[tabindex]")) if (+e.getAttribute("tabindex") > 0) bad.push("positive tabindex");
  for (const e of document.querySelectorAll("[aria-labelledby]"))
    for (const id of e.getAttribute("aria-labelledby").split(" ")) if (!document.getElementById(id)) bad.push("aria-labelledby " + id + " names nothing");
  const ids = new Set();
  for (const e of document.querySelectorAll("[id]")) { if (ids.has(e.id)) bad.push("id " + e.id + " twice"); ids.add(e.id); }
  return bad.join("\n");
})()`

// a11y fails the test with what a11yScript finds on the page.
func a11y(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[string](a11yScript))
	if err != nil {
		t.Fatalf("accessibility check of %s: %v", page, err)
	}
	if bad != "" {
		t.Errorf("accessibility of %s:\n%s", page, bad)
	}
}
