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
	}
	m.Registry.MustRegister(m.duration, m.hits, m.misses, m.kills)
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
