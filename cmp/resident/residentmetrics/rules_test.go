package residentmetrics_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/cmp/resident/residentmetrics"
)

const rulesFile = "../../../deploy/argocd/monitoring/prometheusrule.yaml"

// exported are the series names `throughline cmp serve` exports (a
// histogram's _bucket, _sum and _count).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := residentmetrics.New(func() (int, int64) { return 0, 0 })
	m.WatchRenders(resident.NewRenderLimit(1))
	m.Observe(&resident.Response{}, time.Millisecond)
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range families {
		out[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[f.GetName()+s] = true
			}
		}
	}
	return out
}

// TestPrometheusRule: the alert rules of deploy/argocd/monitoring parse,
// name only metrics the resident renderer exports (a renamed metric would
// leave an alert that never fires), and say what to do.
func TestPrometheusRule(t *testing.T) {
	data, err := os.ReadFile(filepath.FromSlash(rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion, Kind string
		Spec             struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Alert, Expr, For string
					Labels           map[string]string
					Annotations      map[string]string
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("%s: %s %s, want monitoring.coreos.com/v1 PrometheusRule", rulesFile, pr.APIVersion, pr.Kind)
	}
	series := exported(t)
	used := map[string]bool{}
	var alerts []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			alerts = append(alerts, r.Alert)
			if !strings.HasPrefix(r.Alert, "Throughline") {
				t.Errorf("%s: alert name without the Throughline prefix", where)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: want labels.severity, annotations.summary and annotations.description", where)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", where, r.For, err)
				}
			}
			e, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %q: %v", where, r.Expr, err)
				continue
			}
			names := 0
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					names++
					used[vs.Name] = true
					if !series[vs.Name] {
						t.Errorf("%s: %s is not a metric throughline cmp serve exports", where, vs.Name)
					}
				}
				return nil
			})
			if names == 0 {
				t.Errorf("%s: %q selects no metric", where, r.Expr)
			}
		}
	}
	if len(alerts) == 0 || len(slices.Compact(slices.Sorted(slices.Values(alerts)))) != len(alerts) {
		t.Errorf("%s: alerts %v: want some, each named once", rulesFile, alerts)
	}
	// The metrics issue 36 asks users to watch have an alert each.
	for _, m := range []string{
		"throughline_cmp_render_budget_kills_total", "throughline_cmp_render_child_peak_memory_bytes_bucket",
		"throughline_cmp_generate_duration_seconds_bucket", "throughline_cmp_renders_waiting",
		"throughline_cmp_cache_misses_total", "throughline_cmp_cache_hits_total",
	} {
		if !used[m] {
			t.Errorf("%s: no alert watches %s", rulesFile, m)
		}
	}
}
