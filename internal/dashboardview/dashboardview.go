// Package dashboardview evaluates a Grafana dashboard's queries with
// Prometheus's own PromQL engine over a history of scrapes held in
// Prometheus's own TSDB, and lays its panels out as an HTML page: what
// tests check the dashboard in deploy/grafana with, and what the
// screenshot in docs/operations.md shows. It is not Grafana: it draws
// stat and time series panels plainly, from the same queries and units.
// For tests and docs only.
package dashboardview

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/util/teststorage"
)

// Dashboard is the part of a Grafana dashboard's JSON this package reads.
type Dashboard struct {
	Title  string  `json:"title"`
	Panels []Panel `json:"panels"`
}

// Panel is one panel: a row, a stat or a time series.
type Panel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []Target `json:"targets"`
}

// Target is one query of a panel.
type Target struct {
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
}

// Load reads the dashboard JSON at path.
func Load(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading dashboard %s: %w", path, err)
	}
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decoding dashboard %s: %w", path, err)
	}
	return &d, nil
}

// History is a Prometheus TSDB of scrapes, in a temporary directory the
// test removes.
type History struct {
	db  *teststorage.TestStorage
	eng *promql.Engine
	// From and To are the first and the last scrape.
	From, To time.Time
}

// NewHistory is an empty history.
func NewHistory(tb testing.TB) *History {
	return &History{
		db:  teststorage.New(tb),
		eng: promql.NewEngine(promql.EngineOpts{MaxSamples: 10_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute}),
	}
}

// Add stores one scrape at at: the series of mfs as Prometheus stores the
// text format's (a histogram as its _bucket with le, _sum and _count).
func (h *History) Add(ctx context.Context, at time.Time, mfs []*dto.MetricFamily) error {
	app := h.db.Appender(ctx)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			base := map[string]string{}
			for _, l := range m.GetLabel() {
				base[l.GetName()] = l.GetValue()
			}
			var err error
			series := func(name string, v float64, extra ...string) {
				b := labels.NewBuilder(labels.FromMap(base))
				b.Set(model.MetricNameLabel, name)
				for i := 0; i+1 < len(extra); i += 2 {
					b.Set(extra[i], extra[i+1])
				}
				if _, aerr := app.Append(0, b.Labels(), at.UnixMilli(), v); aerr != nil && err == nil {
					err = fmt.Errorf("storing %s at %s: %w", name, at.Format(time.RFC3339), aerr)
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				series(mf.GetName(), m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				series(mf.GetName(), m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				hg := m.GetHistogram()
				for _, b := range hg.GetBucket() {
					series(mf.GetName()+"_bucket", float64(b.GetCumulativeCount()), "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))
				}
				series(mf.GetName()+"_bucket", float64(hg.GetSampleCount()), "le", "+Inf")
				series(mf.GetName()+"_sum", hg.GetSampleSum())
				series(mf.GetName()+"_count", float64(hg.GetSampleCount()))
			default:
				err = fmt.Errorf("metric %s: type %s is not stored", mf.GetName(), mf.GetType())
			}
			if err != nil {
				_ = app.Rollback()
				return err
			}
		}
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("storing the scrape at %s: %w", at.Format(time.RFC3339), err)
	}
	if h.From.IsZero() || at.Before(h.From) {
		h.From = at
	}
	if at.After(h.To) {
		h.To = at
	}
	return nil
}

// Query is expr with Grafana's variables as the dashboard sets them over
// the history: every app and environment, the whole range.
func (h *History) Query(expr string) string {
	r := int(h.To.Sub(h.From).Seconds())
	return strings.NewReplacer(
		"$__range_s", strconv.Itoa(r), "$__rate_interval", "1h", "$__range", strconv.Itoa(r)+"s",
		"$app", ".*", "$environment", ".*",
	).Replace(expr)
}

// Instant evaluates expr at the end of the history, by SeriesKey.
func (h *History) Instant(ctx context.Context, expr string) (map[string]float64, error) {
	q, err := h.eng.NewInstantQuery(ctx, h.db, nil, h.Query(expr), h.To)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, res.Err)
	}
	out := map[string]float64{}
	switch v := res.Value.(type) {
	case promql.Vector:
		for _, s := range v {
			out[SeriesKey(s.Metric)] = s.F
		}
	case promql.Scalar:
		out[""] = v.V
	default:
		return nil, fmt.Errorf("query %q: a %T, not a vector", expr, res.Value)
	}
	return out, nil
}

// Point is one value of a range query.
type Point struct {
	At    time.Time
	Value float64
}

// Range evaluates expr over the history every step, by SeriesKey.
func (h *History) Range(ctx context.Context, expr string, step time.Duration) (map[string][]Point, error) {
	q, err := h.eng.NewRangeQuery(ctx, h.db, nil, h.Query(expr), h.From, h.To, step)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, res.Err)
	}
	m, ok := res.Value.(promql.Matrix)
	if !ok {
		return nil, fmt.Errorf("query %q: a %T, not a matrix", expr, res.Value)
	}
	out := map[string][]Point{}
	for _, s := range m {
		for _, p := range s.Floats {
			out[SeriesKey(s.Metric)] = append(out[SeriesKey(s.Metric)], Point{time.UnixMilli(p.T).UTC(), p.F})
		}
	}
	return out, nil
}

// SeriesKey names a result series: "app/environment" first when it has
// them, then its other labels as name=value in order.
func SeriesKey(l labels.Labels) string {
	var head string
	var rest []string
	app, env := l.Get("app"), l.Get("environment")
	switch {
	case app != "":
		head = app + "/" + env
	case env != "":
		head = env
	}
	l.Range(func(lb labels.Label) {
		if lb.Name != "app" && lb.Name != "environment" {
			rest = append(rest, lb.Name+"="+lb.Value)
		}
	})
	sort.Strings(rest)
	if head != "" {
		rest = append([]string{head}, rest...)
	}
	return strings.Join(rest, " ")
}

// Format is v in the panel's unit, as Grafana shows it (roughly).
func Format(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "no data"
	case unit == "percentunit":
		return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
	case unit == "s":
		d := time.Duration(v * float64(time.Second)).Round(time.Second)
		return d.String()
	}
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
