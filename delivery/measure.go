package delivery

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/promotion"
)

// measure counts every attempt whose last event is in the window.
func (rd *Reader) measure(ctx context.Context, rep *Report, reg *environment.Registry, attempts map[string]*attempt, since time.Time,
	fig func(app, env string) *Figures) error {
	ids := sortedIDs(attempts)
	type promo struct{ app, env, digest string }
	perPromotion := map[promo]int{}
	for _, id := range ids {
		a := attempts[id]
		rec := a.rec
		if last := lastEvent(a); !since.IsZero() && last.Before(since) {
			continue
		}
		f := fig(rec.App, rec.Target.Environment)
		f.Registered = f.Registered || registered(reg, rec)
		f.Attempts++
		k := promo{rec.App, rec.Target.Environment, rec.Artifact.Digest}
		perPromotion[k] = max(perPromotion[k], rec.Attempt)
		f.Outcomes[outcome(rec.State)]++
		if rec.State == promotion.Halted {
			f.Halts[class(a)]++
		}
		if err := rd.durations(ctx, rep, f, a); err != nil {
			return err
		}
	}
	keys := make([]promo, 0, len(perPromotion))
	for k := range perPromotion {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		f := fig(k.app, k.env)
		f.Promotions++
		f.attempts = append(f.attempts, float64(perPromotion[k]))
	}
	return nil
}

// sortedIDs are the promotion ids of attempts, sorted.
func sortedIDs(attempts map[string]*attempt) []string {
	ids := make([]string, 0, len(attempts))
	for id := range attempts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// durations adds a's measured durations to f; times in the wrong order
// are listed (a's durations are then not counted), never negative.
func (rd *Reader) durations(ctx context.Context, rep *Report, f *Figures, a *attempt) error {
	rec := a.rec
	opened := rec.History[0].At
	var add []func()
	if approved, ok := entered(rec, promotion.Approved); ok {
		// Validate keeps the history in order: never negative.
		add = append(add, func() { f.add(OpenedToApproved, approved.Sub(opened)) })
	}
	var observed time.Time
	if a.ev != nil && a.ev.VerifiedAt != nil {
		observed = a.ev.VerifiedAt.UTC()
	}
	if !observed.IsZero() && rec.Reconciling != nil {
		merged, ok, err := rd.commitTime(ctx, rec.Reconciling.Commit())
		if err != nil {
			return fmt.Errorf("reading the merge time of %s: %w", rec.PromotionID, err)
		}
		if ok {
			if observed.Before(merged) {
				rep.problem(f, Problem{File: evidencePath(a), Reason: fmt.Sprintf("verifiedAt %s is before the desired commit %s (committed %s)",
					stamp(observed), rec.Reconciling.DesiredRevision, stamp(merged))})
				return nil
			}
			add = append(add, func() { f.add(MergedToObserved, observed.Sub(merged)) })
		}
	}
	if accepted, ok := entered(rec, promotion.Accepted); ok && !observed.IsZero() {
		if accepted.Before(observed) {
			rep.problem(f, Problem{File: evidencePath(a), Reason: fmt.Sprintf("verifiedAt %s is after the ACCEPTED decision of %s (%s)",
				stamp(observed), rec.PromotionID, stamp(accepted))})
			return nil
		}
		add = append(add, func() { f.add(ObservedToAccepted, accepted.Sub(observed)) })
	}
	for _, fn := range add {
		fn()
	}
	return nil
}

// evidencePath is the evidence file of a.
func evidencePath(a *attempt) string {
	return promotion.PriorEvidencePath(a.rec.Target.Environment, a.rec.App, a.rec.PromotionID)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// entered is when rec first entered state (promotion.Record.Entered).
func entered(rec *promotion.Record, state promotion.State) (time.Time, bool) {
	h, ok := rec.Entered(state)
	return h.At.UTC(), ok
}

// lastEvent is the last time a's record or evidence names.
func lastEvent(a *attempt) time.Time {
	last := a.rec.History[len(a.rec.History)-1].At
	if a.ev != nil && a.ev.Time.After(last) {
		last = a.ev.Time
	}
	return last
}

// outcome is the outcome of an attempt in state s.
func outcome(s promotion.State) string {
	switch s {
	case promotion.Accepted:
		return OutcomeAccepted
	case promotion.Halted:
		return OutcomeHalted
	case promotion.Rejected:
		return OutcomeRejected
	}
	return OutcomeOpen
}

// class is the failure class of a HALTED attempt.
func class(a *attempt) string {
	switch {
	case a.ev == nil:
		return ClassUnrecorded
	case a.ev.Class == "":
		return ClassUnclassified
	}
	return a.ev.Class
}
