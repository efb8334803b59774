package delivery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
)

// dashboard is deploy/grafana's dashboard, as Grafana imports it.
var dashboard = filepath.Join("..", "deploy", "grafana", "throughline-delivery.json")

// described are the names of the metrics a Collector describes, with the
// series names of its histograms.
func described(t *testing.T) (names, series map[string]bool) {
	t.Helper()
	ch := make(chan *prometheus.Desc, 64)
	(&Collector{}).Describe(ch)
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	names, series = map[string]bool{}, map[string]bool{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names[m[1]] = true
		series[m[1]] = true
		if strings.HasSuffix(m[1], "_seconds") {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				series[m[1]+s] = true
			}
		}
	}
	return names, series
}

// grafanaVariables are the dashboard's variables with a value PromQL
// parses in their place.
var grafanaVariables = strings.NewReplacer("$__range_s", "2592000", "$__rate_interval", "5m", "$__range", "30d")

// TestDashboard: the Grafana dashboard in deploy/grafana is valid JSON,
// every panel reads the dashboard's Prometheus data source, and every
// query and variable parses as PromQL and names only metrics the binary
// exports (a renamed metric fails here, not on a user's screen).
func TestDashboard(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	type source struct{ Type, UID string }
	var d struct {
		UID, Title string
		Panels     []struct {
			Type, Title string
			Datasource  *source
			Targets     []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name, Type string
				Query      json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: no uid or title", dashboard)
	}
	_, series := described(t)
	used := map[string]bool{}
	check := func(where, expr string) {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(expr))
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
			return
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				used[vs.Name] = true
				if !series[vs.Name] {
					t.Errorf("%s: %s is not a metric throughline exports", where, vs.Name)
				}
			}
			return nil
		})
	}
	queries := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %+v, want the dashboard's Prometheus variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		for _, q := range p.Targets {
			check("panel "+p.Title, q.Expr)
			queries++
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+), *\w+\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, q.Query)
			continue
		}
		check("variable "+v.Name, m[1])
	}
	for _, key := range []string{"throughline_dora_deployments_total", "throughline_dora_lead_time_seconds_bucket",
		"throughline_dora_change_failures_total", "throughline_dora_time_to_restore_seconds_bucket"} {
		if !used[key] {
			t.Errorf("no panel reads %s (a DORA key)", key)
		}
	}
	if queries < 10 {
		t.Errorf("%d queries", queries)
	}
}

// TestMetricsDocumented: every metric a Collector exports is in
// docs/delivery-metrics.md's table, and the table names no other.
func TestMetricsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "delivery-metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	names, _ := described(t)
	row := regexp.MustCompile("(?m)^\\| `(throughline_[a-z_]+)` \\|")
	listed := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
		if !names[m[1]] {
			t.Errorf("docs/delivery-metrics.md lists %s, which the binary does not export", m[1])
		}
	}
	for n := range names {
		if !listed[n] {
			t.Errorf("%s is exported but not in docs/delivery-metrics.md's table", n)
		}
	}
}
