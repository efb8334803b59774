package delivery_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/delivery"
	"github.com/throughline-dev/throughline/internal/dashboardview"
)

// TestDashboardQueries: every query of the Grafana dashboard, evaluated by
// Prometheus's own engine over what a Prometheus scraping serve every ten
// minutes through the chain view's story would hold, runs and says what
// `promote status` says of the same story (TestDORAStory's figures): the
// DORA keys per app and environment, the failures not restored, the
// reader's health.
func TestDashboardQueries(t *testing.T) {
	t.Parallel()
	d, err := dashboardview.Load(filepath.Join("..", "deploy", "grafana", "throughline-delivery.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := dashboardview.ScrapeStory(t, chainfixture.New(t, filepath.Join("..", "examples", "gitops-env")))
	got := map[string]map[string]float64{}
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			v, err := h.Instant(context.Background(), q.Expr)
			if err != nil {
				t.Fatalf("panel %q: %v", p.Title, err)
			}
			got[p.Title] = v
		}
	}
	days := h.To.Sub(h.From).Hours() / 24
	near := func(a, b float64) bool { return math.Abs(a-b) <= 0.02*math.Max(math.Abs(b), 1e-9) }
	for _, c := range []struct {
		panel, series string
		want          float64
	}{
		{"Deployment frequency", "cart/production", 3 / days},
		{"Deployment frequency", "checkout/production", 1 / days},
		{"Deployment frequency", "web/production", 0},
		{"Change failure rate", "cart/production", 1.0 / 3},
		{"Change failure rate", "web/production", 1},
		{"Change failure rate", "search/staging", 1},
		{"Change failure rate", "checkout/production", 0},
		{"Failures not restored yet", "web/production", 1},
		{"Failures not restored yet", "search/staging", 1},
		{"Failures not restored yet", "cart/production", 0},
		{"Attempts per promotion", "production", 2},
		{"Since the metrics were read from Git", "", 0},
		{"Files skipped", "", 0},
		{"Refresh errors", "", 0},
	} {
		v, ok := got[c.panel][c.series]
		if !ok || !near(v, c.want) {
			t.Errorf("%s, %s: %v (present %v), want %.4g; all: %v", c.panel, c.series, v, ok, c.want, got[c.panel])
		}
	}
	// Quantiles from buckets: within the bucket holding the story's figure.
	for _, c := range []struct {
		panel, series string
		figure        time.Duration
	}{
		{"Lead time (median)", "checkout/production", 2 * time.Hour},
		{"Lead time (median)", "cart/production", time.Hour},
		{"Time to restore (median)", "cart/production", time.Hour},
	} {
		v := got[c.panel][c.series]
		lo, hi := bucketAround(c.figure.Seconds())
		if !(v > lo && v <= hi) {
			t.Errorf("%s, %s: %v s, want within the bucket (%g, %g] of the story's %s", c.panel, c.series, v, lo, hi, c.figure)
		}
	}
	// The time series panels over the story: the halt and the failures
	// show up in the hour they happened.
	for _, c := range []struct{ panel, series string }{
		{"Halts by class", "class=live"}, {"Change failures by kind", "kind=rollback"}, {"Change failures by kind", "kind=halted"},
	} {
		var expr string
		for _, p := range d.Panels {
			if p.Title == c.panel {
				expr = p.Targets[0].Expr
			}
		}
		series, err := h.Range(context.Background(), expr, dashboardview.ScrapeEvery)
		if err != nil {
			t.Fatal(err)
		}
		peak := 0.0
		for _, p := range series[c.series] {
			peak = max(peak, p.Value)
		}
		if peak < 0.5 {
			t.Errorf("%s, %s: never above 0 over the story (%d points)", c.panel, c.series, len(series[c.series]))
		}
	}
}

// bucketAround is the DurationBuckets bucket holding v.
func bucketAround(v float64) (lo, hi float64) {
	for _, b := range delivery.DurationBuckets {
		if v <= b {
			return lo, b
		}
		lo = b
	}
	return lo, math.Inf(1)
}
