package notifier

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the notifier's Prometheus metrics.
type Metrics struct {
	Received   *prometheus.CounterVec
	Duplicates *prometheus.CounterVec
	Written    *prometheus.CounterVec
	Failures   *prometheus.CounterVec
	Refused    *prometheus.CounterVec
	Statuses   *prometheus.CounterVec
	Acks       *prometheus.HistogramVec
}

// NewMetrics registers the metrics in reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_deliveries_received_total",
			Help: "Deliveries received, by source (argocd, flux)."}, []string{"source"}),
		Duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_deliveries_duplicate_total",
			Help: "Deliveries whose evidence was already in Git."}, []string{"source"}),
		Written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_evidence_written_total",
			Help: "Evidence commits pushed, by decision (ACCEPTED, HALTED)."}, []string{"decision"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_failures_total",
			Help: "Failures by class: source (wrong revision, bad record), render (rendered hash), " +
				"live (image mismatch, degraded), runtime (Git, API server, forge)."}, []string{"class"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_deliveries_refused_total",
			Help: "Deliveries refused before processing, by reason (unauthorized, too-large, malformed, rate-limited)."}, []string{"source", "reason"}),
		Statuses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_commit_statuses_total",
			Help: "Commit statuses posted, by result (ok, failed)."}, []string{"result"}),
		Acks: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "throughline_notifier_ack_seconds",
			Help: "Time from receiving a delivery to answering it.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"source", "result"}),
	}
	for _, c := range []prometheus.Collector{m.Received, m.Duplicates, m.Written, m.Failures, m.Refused, m.Statuses, m.Acks} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering notifier metrics: %w", err)
		}
	}
	for _, c := range []string{ClassSource, ClassRender, ClassLive, ClassRuntime} {
		m.Failures.WithLabelValues(c)
	}
	return m, nil
}
