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
	// Ignored counts the deliveries answered 200 "ignored", by reason.
	Ignored  *prometheus.CounterVec
	Statuses *prometheus.CounterVec
	Acks     *prometheus.HistogramVec
	// Resyncs counts the records resynced by outcome, ResyncPasses the
	// passes by result, ResyncLast is when the last pass succeeded.
	Resyncs      *prometheus.CounterVec
	ResyncPasses *prometheus.CounterVec
	ResyncLast   prometheus.Gauge
	// Summaries counts the verification summaries by result.
	Summaries *prometheus.CounterVec
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
				"live (image mismatch, degraded), runtime (a runtime check failed), internal (Git, API server, forge unreachable)."}, []string{"class"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_deliveries_refused_total",
			Help: "Deliveries refused before processing, by reason (unauthorized, too-large, malformed, rate-limited)."}, []string{"source", "reason"}),
		Ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_deliveries_ignored_total",
			Help: "Deliveries answered 200 ignored, by reason (unknown-app: no promotion record for the app and environment; " +
				"not-applicable: the record is not RECONCILING; irrelevant: nothing to decide)."}, []string{"source", "reason"}),
		Statuses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_commit_statuses_total",
			Help: "Commit statuses posted, by result (ok, failed)."}, []string{"result"}),
		Acks: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "throughline_notifier_ack_seconds",
			Help: "Time from receiving a delivery to answering it.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"source", "result"}),
		Resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_resyncs_total",
			Help: "RECONCILING records resynced from their controller's status, by outcome (accepted, halted, duplicate, wait, " +
				"no-controller, ambiguous, refused, error)."}, []string{"outcome"}),
		ResyncPasses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_resync_passes_total",
			Help: "Resync passes, by result (ok, error: the records or the controller objects could not be listed)."}, []string{"result"}),
		ResyncLast: prometheus.NewGauge(prometheus.GaugeOpts{Name: "throughline_notifier_resync_last_success_timestamp_seconds",
			Help: "When the last resync pass succeeded (Unix seconds; 0: never, or the resync is off or not the leader)."}),
		Summaries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throughline_notifier_verification_summaries_total",
			Help: "Verification summaries of acceptances, by result (published; existing: already attached, nothing pushed; " +
				"failed: not published or not recorded, the record stays ACCEPTED)."}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.Received, m.Duplicates, m.Written, m.Failures, m.Refused, m.Ignored, m.Statuses, m.Acks,
		m.Resyncs, m.ResyncPasses, m.ResyncLast, m.Summaries} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering notifier metrics: %w", err)
		}
	}
	for _, c := range []string{ClassSource, ClassRender, ClassLive, ClassRuntime, ClassInternal} {
		m.Failures.WithLabelValues(c)
	}
	for _, o := range resyncOutcomes {
		m.Resyncs.WithLabelValues(o)
	}
	for _, r := range []string{"ok", "error"} {
		m.ResyncPasses.WithLabelValues(r)
	}
	for _, r := range []string{"published", "existing", "failed"} {
		m.Summaries.WithLabelValues(r)
	}
	return m, nil
}
