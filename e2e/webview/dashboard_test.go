//go:build e2e

package webview

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/internal/dashboardview"
)

// TestDashboardPage: deploy/grafana's dashboard, its queries evaluated by
// Prometheus's engine over the scraped story (internal/dashboardview), laid
// out in headless Chromium: every panel of the JSON is on the page with
// data, the DORA stats name the story's pairs, nothing the template
// refused to write (ZgotmplZ); the screenshot is docs/operations.md's
// (THROUGHLINE_DOCS_IMAGES).
func TestDashboardPage(t *testing.T) {
	d, err := dashboardview.Load(filepath.Join("..", "..", "deploy", "grafana", "throughline-delivery.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := dashboardview.ScrapeStory(t, chainfixture.New(t, example))
	page, err := dashboardview.Page(context.Background(), d, h, dashboardview.ScrapeEvery)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "ZgotmplZ") {
		t.Fatalf("the page holds a value html/template refused")
	}
	file := filepath.Join(t.TempDir(), "dashboard.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+file)); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range d.Panels {
		if p.Type != "row" {
			want++
		}
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("section.panel").length`))
	if err != nil || n != want {
		t.Fatalf("%d panels on the page (%v), want %d", n, err, want)
	}
	empty, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("section.panel .empty").length`))
	if err != nil || empty != 0 {
		t.Errorf("%d panels without data (%v)", empty, err)
	}
	// A panel's box is where its gridPos puts it: Deployment frequency
	// (x 0) left of Change failure rate (x 12) on the same row.
	left, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`["Deployment frequency", "Change failure rate"].map(
		t => document.querySelector('section[aria-label="' + t + '"]').getBoundingClientRect()).flatMap(r => [r.left, r.top])`))
	if err != nil || len(left) != 4 || left[0] >= left[2] || left[1] != left[3] {
		t.Errorf("panel boxes %v (%v): want Deployment frequency left of Change failure rate, same top", left, err)
	}
	if s := text(t, ctx, `section[aria-label="Change failure rate"]`); !strings.Contains(s, "cart/production 33.3%") ||
		!strings.Contains(s, "web/production 100.0%") {
		t.Errorf("Change failure rate panel: %q", s)
	}
	screenshot(t, ctx, "dashboard.png", true)
}
