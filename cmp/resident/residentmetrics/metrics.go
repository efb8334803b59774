// Package residentmetrics is the Prometheus side of the resident renderer
// (throughline cmp serve): the metrics it serves on /metrics. It is apart
// from package resident so that the plugin's thin client links no
// Prometheus.
package residentmetrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/render"
)

// Results of a generate (the label result).
const (
	ResultHit    = "hit"
	ResultRender = "render"
	ResultError  = "error"
)

// Metrics are the resident renderer's metrics on their own registry.
type Metrics struct {
	Registry *prometheus.Registry

	duration *prometheus.HistogramVec
	hits     prometheus.Counter
	misses   prometheus.Counter
	kills    *prometheus.CounterVec
	peak     prometheus.Histogram
}

// New registers the metrics; memory, when set, reports the entries and
// bytes the in-memory cache holds (cmp.Cache.MemoryStats).
func New(memory func() (entries int, bytes int64)) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "throughline_cmp_generate_duration_seconds",
			Help: "Time the resident renderer took to answer one generate, by result (hit, render, error).",
			// From a memory hit of a small app (about 1 ms) to the render
			// budget (45 s).
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 50},
		}, []string{"result"}),
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "throughline_cmp_cache_hits_total", Help: "Generates served from the render cache.",
		}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "throughline_cmp_cache_misses_total", Help: "Generates the render cache could not serve (rendered, or refused).",
		}),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "throughline_cmp_render_budget_kills_total",
			Help: "Render children killed for spending their budget, by budget (time, memory).",
		}, []string{"budget"}),
		peak: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "throughline_cmp_render_child_peak_memory_bytes",
			Help: "Peak resident memory of each render child (wait4's maxrss), whatever the render's outcome.",
			// 8 MiB to 1 GiB; the child's default memory budget is 256 MiB.
			Buckets: prometheus.ExponentialBuckets(8<<20, 2, 8),
		}),
	}
	m.Registry.MustRegister(m.duration, m.hits, m.misses, m.kills, m.peak)
	for _, r := range []string{ResultHit, ResultRender, ResultError} {
		m.duration.WithLabelValues(r)
	}
	for _, b := range []string{"time", "memory"} {
		m.kills.WithLabelValues(b)
	}
	if memory != nil {
		m.Registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "throughline_cmp_memory_cache_entries", Help: "Entries the resident renderer's in-memory cache holds.",
			}, func() float64 { n, _ := memory(); return float64(n) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "throughline_cmp_memory_cache_bytes", Help: "Bytes the resident renderer's in-memory cache holds (approximate).",
			}, func() float64 { _, b := memory(); return float64(b) }),
		)
	}
	return m
}

// ObserveChild records one render child's end (render.Worker.OnExit).
func (m *Metrics) ObserveChild(e render.ChildExit) {
	if e.PeakRSS > 0 {
		m.peak.Observe(float64(e.PeakRSS))
	}
}

// WatchRenders reports l's renders in flight, waiting and the bound.
func (m *Metrics) WatchRenders(l *resident.RenderLimit) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "throughline_cmp_renders_in_flight", Help: "Renders (cache misses) holding one of the resident renderer's render slots.",
		}, func() float64 { return float64(l.InFlight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "throughline_cmp_renders_waiting", Help: "Renders (cache misses) waiting for a render slot (--max-renders).",
		}, func() float64 { return float64(l.Waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "throughline_cmp_render_slots", Help: "Renders the resident renderer runs at once (--max-renders).",
		}, func() float64 { return float64(l.Max()) }),
	)
}

// Observe records one answered generate (resident.Server.Observe).
func (m *Metrics) Observe(res *resident.Response, took time.Duration) {
	result := ResultRender
	switch {
	case res.Code != 0:
		result = ResultError
	case res.CacheHit:
		result = ResultHit
	}
	m.duration.WithLabelValues(result).Observe(took.Seconds())
	if res.CacheHit {
		m.hits.Inc()
	} else {
		m.misses.Inc()
	}
	if res.BudgetKill != "" {
		m.kills.WithLabelValues(res.BudgetKill).Inc()
	}
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
