package delivery

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

// TestDeliveryMetricsCollector: a class outside the known ones is counted
// as "other" (the label values stay bounded), and a refresh of a tip that
// did not move reads nothing again.
func TestDeliveryMetricsCollector(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	halt(t, f, "quota", "sha256:"+strings.Repeat("71", 32), "made-up-class")
	ctx := context.Background()
	tips := 0
	c := &Collector{Reader: &Reader{Repo: f.Repo}, Tip: func(ctx context.Context) (string, error) {
		tips++
		return f.Repo.BaseRev(ctx)
	}}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	first := c.refreshed
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if tips != 2 || !c.refreshed.Equal(first) {
		t.Fatalf("tip asked %d times; an unmoved tip was read again", tips)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	halts := map[string]float64{}
	classes := map[string]bool{}
	failures := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "throughline_dora_change_failures_total" {
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				failures[l["app"]+"/"+l["environment"]+" "+l["kind"]] = m.GetCounter().GetValue()
			}
		}
		if mf.GetName() != "throughline_delivery_halts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			classes[l["class"]] = true
			if l["app"] == "quota" {
				halts[l["class"]] = m.GetCounter().GetValue()
			}
		}
	}
	if halts[ClassOther] != 1 || halts[ClassLive] != 0 || len(halts) != 5 {
		t.Fatalf("quota's halts: %v", halts)
	}
	for k, want := range map[string]float64{"quota/staging halted": 1, "cart/production rollback": 1, "search/staging break-glass": 1,
		"web/production halted": 1, "checkout/production halted": 0} {
		if failures[k] != want {
			t.Errorf("throughline_dora_change_failures_total %s = %g, want %g", k, failures[k], want)
		}
	}
	for c := range classes {
		if !metricClasses[c] && c != ClassOther {
			t.Fatalf("class label %q", c)
		}
	}
}
