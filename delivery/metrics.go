package delivery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultInterval is how often a Collector asks Git whether the branch moved.
const DefaultInterval = time.Minute

// DefaultLimit bounds the app and environment pairs a Collector labels.
const DefaultLimit = 100

// DurationBuckets are the upper bounds (seconds) of the duration histograms:
// 30 s to a week.
var DurationBuckets = []float64{30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 604800}

// metricClasses are the class label values; any other class is "other"
// (the report itself keeps it as itself).
var metricClasses = map[string]bool{ClassSource: true, ClassRender: true, ClassLive: true, ClassRuntime: true,
	ClassUnclassified: true, ClassUnrecorded: true}

// ClassOther is the class label of the classes not in metricClasses.
const ClassOther = "other"

// The metrics a Collector exposes (docs/delivery-metrics.md).
var (
	pairLabels   = []string{"app", "environment"}
	descDuration = map[Figure]*prometheus.Desc{
		OpenedToApproved: prometheus.NewDesc("throughline_delivery_opened_to_approved_seconds",
			"From a promotion attempt's CANDIDATE record (the PR opened) to its APPROVED entry, per attempt that was approved.",
			pairLabels, nil),
		MergedToObserved: prometheus.NewDesc("throughline_delivery_merged_to_observed_seconds",
			"From the desired (merge) commit's committer time to the evidence's verifiedAt (the observed revision verified live).",
			pairLabels, nil),
		ObservedToAccepted: prometheus.NewDesc("throughline_delivery_observed_to_accepted_seconds",
			"From the evidence's verifiedAt to the record's ACCEPTED entry, per accepted attempt.", pairLabels, nil),
	}
	descPromotions = prometheus.NewDesc("throughline_delivery_promotions_total",
		"Promotions (an app, an environment and a digest) with an attempt in Git.", pairLabels, nil)
	descAttempts = prometheus.NewDesc("throughline_delivery_attempts_total",
		"Attempts of the promotions: the sum of each promotion's highest attempt number.", pairLabels, nil)
	descDecisions = prometheus.NewDesc("throughline_delivery_decisions_total",
		"Attempts decided, by outcome (accepted, halted, rejected).", append(pairLabels, "outcome"), nil)
	descOpen = prometheus.NewDesc("throughline_delivery_open_attempts",
		"Attempts not decided yet (CANDIDATE, VERIFIED, APPROVED or RECONCILING).", pairLabels, nil)
	descHalts = prometheus.NewDesc("throughline_delivery_halts_total", "HALTED attempts by failure class (source, render, live, runtime, "+
		"unclassified: evidence without a class, unrecorded: no usable evidence, other).", append(pairLabels, "class"), nil)
	descDORADeployments = prometheus.NewDesc("throughline_dora_deployments_total",
		"DORA deployment frequency: ACCEPTED attempts (rollbacks included).", pairLabels, nil)
	descDORALeadTime = prometheus.NewDesc("throughline_dora_lead_time_seconds",
		"DORA lead time: from the artifact's candidacy (its first record of the app) to an ACCEPTED decision that is not a rollback.",
		pairLabels, nil)
	descDORAFailures = prometheus.NewDesc("throughline_dora_change_failures_total",
		"DORA change failures by kind: halted (a HALTED attempt), rollback (an accepted rollback), break-glass (a reconciliation pause).",
		append(pairLabels, "kind"), nil)
	descDORARestore = prometheus.NewDesc("throughline_dora_time_to_restore_seconds",
		"DORA time to restore: from a change failure to the next ACCEPTED decision of the app in the environment.", pairLabels, nil)
	descDORAUnrestored = prometheus.NewDesc("throughline_dora_unrestored_failures",
		"Change failures not followed by an ACCEPTED decision yet.", pairLabels, nil)
	descInvalid = prometheus.NewDesc("throughline_delivery_invalid_files",
		"Record versions and evidence files skipped at the revision read (times in the wrong order, unparsable, no promotion).", nil, nil)
	descRefreshed = prometheus.NewDesc("throughline_delivery_last_refresh_timestamp_seconds",
		"When the delivery metrics were last read from Git (Unix seconds; 0: not yet).", nil, nil)
	descErrors = prometheus.NewDesc("throughline_delivery_refresh_errors_total", "Reads of the delivery metrics from Git that failed.", nil, nil)
)

// Collector exposes the delivery metrics of a branch as Prometheus
// metrics: cumulative over all of the branch's history (a window is
// PromQL's increase()), each counter and histogram only growing while the
// history is only appended to (an attempt's timestamps and decision are
// final; open attempts are a gauge), read again only when the branch's
// tip moves, and
// labelled by app and environment for at most Limit pairs the registry
// declares (Report.Bounded). A scrape never reads Git.
type Collector struct {
	Reader *Reader
	// Tip is the commit to read now (the branch's tip).
	Tip func(ctx context.Context) (string, error)
	// Limit bounds the labelled pairs (default DefaultLimit).
	Limit int
	// Interval is how often Run asks Tip (default DefaultInterval).
	Interval time.Duration
	// OnError receives a failed refresh (nil: dropped; the error counter
	// counts it).
	OnError func(error)
	// Now is the clock of the refresh time exported (nil: time.Now).
	Now func() time.Time

	mu        sync.RWMutex
	rev       string
	figs      []*Figures
	invalid   int
	refreshed time.Time
	errors    int
}

// Describe sends the descriptions of the metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range Measured {
		ch <- descDuration[m]
	}
	for _, d := range []*prometheus.Desc{descPromotions, descAttempts, descDecisions, descOpen, descHalts,
		descDORADeployments, descDORALeadTime, descDORAFailures, descDORARestore, descDORAUnrestored,
		descInvalid, descRefreshed, descErrors} {
		ch <- d
	}
}

// Collect sends the metrics of the last refresh.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, f := range c.figs {
		for _, m := range Measured {
			ch <- histogram(descDuration[m], f.Samples(m), DurationBuckets, f.App, f.Environment)
		}
		var attempts float64
		for _, n := range f.AttemptSamples() {
			attempts += n
		}
		ch <- prometheus.MustNewConstMetric(descPromotions, prometheus.CounterValue, float64(f.Promotions), f.App, f.Environment)
		ch <- prometheus.MustNewConstMetric(descAttempts, prometheus.CounterValue, attempts, f.App, f.Environment)
		for _, o := range []string{OutcomeAccepted, OutcomeHalted, OutcomeRejected} {
			ch <- prometheus.MustNewConstMetric(descDecisions, prometheus.CounterValue, float64(f.Outcomes[o]), f.App, f.Environment, o)
		}
		ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(f.Outcomes[OutcomeOpen]), f.App, f.Environment)
		for class, n := range metricHalts(f.Halts) {
			ch <- prometheus.MustNewConstMetric(descHalts, prometheus.CounterValue, float64(n), f.App, f.Environment, class)
		}
		d := f.DORA
		ch <- prometheus.MustNewConstMetric(descDORADeployments, prometheus.CounterValue, float64(d.Deployments), f.App, f.Environment)
		ch <- histogram(descDORALeadTime, f.Samples(LeadTime), DurationBuckets, f.App, f.Environment)
		for _, k := range FailureKinds {
			ch <- prometheus.MustNewConstMetric(descDORAFailures, prometheus.CounterValue, float64(d.ChangeFailures[k]), f.App, f.Environment, k)
		}
		ch <- histogram(descDORARestore, f.Samples(TimeToRestore), DurationBuckets, f.App, f.Environment)
		ch <- prometheus.MustNewConstMetric(descDORAUnrestored, prometheus.GaugeValue, float64(d.Unrestored), f.App, f.Environment)
	}
	ch <- prometheus.MustNewConstMetric(descInvalid, prometheus.GaugeValue, float64(c.invalid))
	var at float64
	if !c.refreshed.IsZero() {
		at = float64(c.refreshed.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(descRefreshed, prometheus.GaugeValue, at)
	ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(c.errors))
}

// metricHalts folds the classes outside metricClasses into ClassOther.
func metricHalts(h map[string]int) map[string]int {
	out := map[string]int{ClassOther: 0}
	for c, n := range h {
		if !metricClasses[c] {
			c = ClassOther
		}
		out[c] += n
	}
	return out
}

// histogram is a constant histogram of samples.
func histogram(desc *prometheus.Desc, samples, bounds []float64, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var sum float64
	for _, b := range bounds {
		buckets[b] = 0
	}
	for _, v := range samples {
		sum += v
		for _, b := range bounds {
			if v <= b {
				buckets[b]++
			}
		}
	}
	return prometheus.MustNewConstHistogram(desc, uint64(len(samples)), sum, buckets, labels...)
}

// Refresh reads the report again when Tip moved since the last refresh.
func (c *Collector) Refresh(ctx context.Context) error {
	err := c.refresh(ctx)
	if err != nil {
		c.mu.Lock()
		c.errors++
		c.mu.Unlock()
	}
	return err
}

// refresh is Refresh without counting the error.
func (c *Collector) refresh(ctx context.Context) error {
	tip, err := c.Tip(ctx)
	if err != nil {
		return fmt.Errorf("delivery metrics: the branch's tip: %w", err)
	}
	c.mu.RLock()
	same := tip == c.rev
	c.mu.RUnlock()
	if same {
		return nil
	}
	rep, err := c.Reader.Read(ctx, Options{Rev: tip})
	if err != nil {
		return fmt.Errorf("delivery metrics at %s: %w", tip, err)
	}
	limit := c.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	figs := rep.Bounded(limit)
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	c.mu.Lock()
	c.rev, c.figs, c.invalid, c.refreshed = tip, figs, rep.Invalid, now()
	c.mu.Unlock()
	return nil
}

// Run refreshes now and then every Interval until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	every := c.Interval
	if every <= 0 {
		every = DefaultInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := c.Refresh(ctx); err != nil && c.OnError != nil && ctx.Err() == nil {
			c.OnError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
