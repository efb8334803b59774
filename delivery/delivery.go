package delivery

import (
	"sort"
	"time"
)

// SchemaVersion names the JSON document of a Report.
const SchemaVersion = "delivery/v1"

// The failure classes every report lists (evidence/v1's class of a HALTED
// decision), and the two it adds.
const (
	ClassSource  = "source"
	ClassRender  = "render"
	ClassLive    = "live"
	ClassRuntime = "runtime"
	// ClassUnclassified counts HALTED evidence that names no class.
	ClassUnclassified = "unclassified"
	// ClassUnrecorded counts HALTED records without usable evidence.
	ClassUnrecorded = "unrecorded"
)

// Classes are the failure classes every Figures lists, at 0 when none.
var Classes = []string{ClassSource, ClassRender, ClassLive, ClassRuntime}

// The outcomes of an attempt (Figures.Outcomes).
const (
	OutcomeAccepted = "accepted"
	OutcomeHalted   = "halted"
	OutcomeRejected = "rejected"
	// OutcomeOpen: CANDIDATE, VERIFIED, APPROVED or RECONCILING.
	OutcomeOpen = "open"
)

// Figure names one measured duration.
type Figure string

// The durations measured (see the package documentation for their
// timestamps).
const (
	OpenedToApproved   Figure = "openedToApproved"
	MergedToObserved   Figure = "mergedToObserved"
	ObservedToAccepted Figure = "observedToAccepted"
)

// Measured are the durations measured, in order.
var Measured = []Figure{OpenedToApproved, MergedToObserved, ObservedToAccepted}

// Report is the delivery metrics of a revision of the GitOps repository.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	// Revision is the commit read.
	Revision string `json:"revision"`
	// Since starts the window (absent: all of the history).
	Since *time.Time `json:"since,omitempty"`
	// Until is when the report was made.
	Until time.Time `json:"until"`
	// Registry is true when the repository's policy declares environments
	// (Figures.Registered then says which pairs it declares).
	Registry bool `json:"registry"`
	// Apps are the figures per app and environment, by app then environment.
	Apps []*Figures `json:"apps"`
	// Invalid counts the record versions and evidence files skipped (each
	// listed in Problems).
	Invalid  int       `json:"invalid"`
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is a file that was skipped, and why.
type Problem struct {
	File string `json:"file"`
	// Commit is the version of File read ("" for the revision read).
	Commit string `json:"commit,omitempty"`
	Reason string `json:"reason"`
}

// Figures are the delivery figures of one app in one environment.
type Figures struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
	// Registered is true when the environment registry declares the
	// records' overlay path as this app's in this environment.
	Registered bool `json:"registered"`
	// Promotions counts the promotions (digests) with an attempt in the
	// window, Attempts those attempts.
	Promotions           int     `json:"promotions"`
	Attempts             int     `json:"attempts"`
	AttemptsPerPromotion Summary `json:"attemptsPerPromotion"`
	// Outcomes counts the attempts by their last state.
	Outcomes map[string]int `json:"outcomes"`
	// Halts counts the HALTED attempts by failure class.
	Halts              map[string]int `json:"halts"`
	OpenedToApproved   Durations      `json:"openedToApproved"`
	MergedToObserved   Durations      `json:"mergedToObserved"`
	ObservedToAccepted Durations      `json:"observedToAccepted"`
	// DORA are the four keys (docs/delivery-metrics.md#dora).
	DORA DORA `json:"dora"`
	// Invalid counts the files of this app and environment skipped.
	Invalid int `json:"invalid"`

	samples  map[Figure][]float64
	attempts []float64
	// window is the report's window (0: all of the history).
	window time.Duration
}

// Durations summarize one duration, in seconds.
type Durations struct {
	Count  int     `json:"count"`
	Median float64 `json:"medianSeconds"`
	P90    float64 `json:"p90Seconds"`
	Max    float64 `json:"maxSeconds"`
	Sum    float64 `json:"sumSeconds"`
}

// Summary summarizes a count per promotion.
type Summary struct {
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

// Samples are the measured values of figure (seconds), unsorted.
func (f *Figures) Samples(figure Figure) []float64 {
	return append([]float64(nil), f.samples[figure]...)
}

// AttemptSamples are the attempts of each promotion counted.
func (f *Figures) AttemptSamples() []float64 { return append([]float64(nil), f.attempts...) }

// newFigures are the empty figures of app in env, every outcome and known
// class listed at 0.
func newFigures(app, env string) *Figures {
	f := &Figures{App: app, Environment: env, Outcomes: map[string]int{}, Halts: map[string]int{}, samples: map[Figure][]float64{},
		DORA: newDORA()}
	for _, o := range []string{OutcomeAccepted, OutcomeHalted, OutcomeRejected, OutcomeOpen} {
		f.Outcomes[o] = 0
	}
	for _, c := range Classes {
		f.Halts[c] = 0
	}
	return f
}

// add is one sample of figure.
func (f *Figures) add(figure Figure, d time.Duration) {
	f.samples[figure] = append(f.samples[figure], d.Seconds())
}

// summarize fills the summaries from the samples.
func (f *Figures) summarize() {
	f.OpenedToApproved = durations(f.samples[OpenedToApproved])
	f.MergedToObserved = durations(f.samples[MergedToObserved])
	f.ObservedToAccepted = durations(f.samples[ObservedToAccepted])
	d := durations(f.attempts)
	f.AttemptsPerPromotion = Summary{Median: d.Median, P90: d.P90, Max: d.Max}
	f.DORA.summarize(f, f.window)
}

// durations summarizes samples (seconds).
func durations(samples []float64) Durations {
	if len(samples) == 0 {
		return Durations{}
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	d := Durations{Count: len(s), Median: rank(s, 0.5), P90: rank(s, 0.9), Max: s[len(s)-1]}
	for _, v := range s {
		d.Sum += v
	}
	return d
}

// rank is the nearest-rank q-quantile of sorted s (not empty): the
// smallest value with at least q of the values at or below it.
func rank(s []float64, q float64) float64 {
	i := int(q*float64(len(s)) + 0.999999999)
	return s[min(max(i-1, 0), len(s)-1)]
}

// Other is the app and environment of the figures Bounded folds together.
const Other = "_other"

// Bounded returns at most limit figures, the rest folded into one whose
// app and environment are Other (last): what a metric may carry as
// labels. Of a repository with an environment registry only the pairs it
// declares keep their own figures; without one the first limit pairs do.
func (r *Report) Bounded(limit int) []*Figures {
	var out []*Figures
	var other *Figures
	for _, f := range r.Apps {
		if len(out) < limit && (f.Registered || !r.Registry) {
			out = append(out, f)
			continue
		}
		if other == nil {
			other = newFigures(Other, Other)
		}
		other.merge(f)
	}
	if other != nil {
		other.summarize()
		out = append(out, other)
	}
	return out
}

// merge adds o's counts and samples to f (summarize after).
func (f *Figures) merge(o *Figures) {
	f.Promotions += o.Promotions
	f.DORA.merge(o.DORA)
	f.Attempts += o.Attempts
	f.Invalid += o.Invalid
	for k, v := range o.Outcomes {
		f.Outcomes[k] += v
	}
	for k, v := range o.Halts {
		f.Halts[k] += v
	}
	for k, v := range o.samples {
		f.samples[k] = append(f.samples[k], v...)
	}
	f.attempts = append(f.attempts, o.attempts...)
}
