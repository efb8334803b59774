package delivery

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/promotion"
)

// The DORA durations (docs/delivery-metrics.md#dora), samples of Figures
// beside the Measured ones.
const (
	// LeadTime is from the artifact's candidacy (its first record in any
	// environment of the app) to an ACCEPTED decision that is not a
	// rollback.
	LeadTime Figure = "leadTime"
	// TimeToRestore is from a change failure to the next ACCEPTED decision
	// of the app in the environment.
	TimeToRestore Figure = "timeToRestore"
)

// The kinds of change failure (DORA.ChangeFailures).
const (
	// FailureHalted is a HALTED attempt (its decision time).
	FailureHalted = "halted"
	// FailureRollback is an ACCEPTED rollback (a record verified by the
	// environment's own earlier acceptance), from when it was proposed.
	FailureRollback = "rollback"
	// FailureBreakGlass is a break-glass pause of reconciliation
	// (breakglass/<env>/<app>.yaml, from its pausedAt).
	FailureBreakGlass = "break-glass"
)

// FailureKinds are the kinds every DORA lists, at 0 when none.
var FailureKinds = []string{FailureHalted, FailureRollback, FailureBreakGlass}

// DORA are the four keys of one app in one environment, from Git.
type DORA struct {
	// Deployments counts the ACCEPTED attempts (deployment frequency:
	// DeploymentsPerDay over a window).
	Deployments       int     `json:"deployments"`
	DeploymentsPerDay float64 `json:"deploymentsPerDay,omitempty"`
	// LeadTime is the lead time of the accepted attempts (rollbacks aside).
	LeadTime Durations `json:"leadTime"`
	// ChangeFailures counts the failures by kind (FailureKinds);
	// ChangeFailureRate is their sum over the changes that reached the
	// environment (accepted and halted attempts), 0 without one.
	ChangeFailures    map[string]int `json:"changeFailures"`
	ChangeFailureRate float64        `json:"changeFailureRate"`
	// TimeToRestore is the time to restore of the failures followed by an
	// ACCEPTED decision; Unrestored counts those not followed by one yet.
	TimeToRestore Durations `json:"timeToRestore"`
	Unrestored    int       `json:"unrestored"`
}

func newDORA() DORA {
	d := DORA{ChangeFailures: map[string]int{}}
	for _, k := range FailureKinds {
		d.ChangeFailures[k] = 0
	}
	return d
}

// failure is one change failure: its kind and when it started.
type failure struct {
	kind string
	at   time.Time
}

// dora adds the DORA figures of the attempts in the window (since; zero:
// all) and of the break-glass episodes at rev to the figures fig returns.
// Lead times start at the artifact's first record in any environment of
// the app, restores end at the next acceptance: both read from every
// attempt, in the window or not.
func (rd *Reader) dora(ctx context.Context, rev string, rep *Report, attempts map[string]*attempt, since time.Time,
	fig func(app, env string) *Figures) error {
	type artifact struct{ app, digest string }
	firstSeen := map[artifact]time.Time{}
	accepted := map[[2]string][]time.Time{}
	for _, a := range attempts {
		rec := a.rec
		k := artifact{rec.App, rec.Artifact.Digest}
		if t, ok := firstSeen[k]; !ok || rec.History[0].At.Before(t) {
			firstSeen[k] = rec.History[0].At.UTC()
		}
		if at, ok := entered(rec, promotion.Accepted); ok {
			pair := [2]string{rec.App, rec.Target.Environment}
			accepted[pair] = append(accepted[pair], at)
		}
	}
	failures := map[[2]string][]failure{}
	for _, id := range sortedIDs(attempts) {
		a := attempts[id]
		rec := a.rec
		if last := lastEvent(a); !since.IsZero() && last.Before(since) {
			continue
		}
		pair := [2]string{rec.App, rec.Target.Environment}
		f := fig(rec.App, rec.Target.Environment)
		switch rec.State {
		case promotion.Accepted:
			at, _ := entered(rec, promotion.Accepted)
			f.DORA.Deployments++
			if rec.VerifiedIn != nil && rec.VerifiedIn.IsPriorAcceptance() {
				// A rollback restores an earlier change: it has no lead time.
				failures[pair] = append(failures[pair], failure{FailureRollback, rec.History[0].At.UTC()})
				continue
			}
			if lead := at.Sub(firstSeen[artifact{rec.App, rec.Artifact.Digest}]); lead >= 0 {
				f.add(LeadTime, lead)
			}
		case promotion.Halted:
			at, _ := entered(rec, promotion.Halted)
			failures[pair] = append(failures[pair], failure{FailureHalted, at})
		}
	}
	if err := rd.pauses(ctx, rev, rep, since, fig, failures); err != nil {
		return err
	}
	for pair, fs := range failures {
		f := fig(pair[0], pair[1])
		times := accepted[pair]
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		for _, fl := range fs {
			f.DORA.ChangeFailures[fl.kind]++
			i, _ := slices.BinarySearchFunc(times, fl.at, func(t, at time.Time) int { return t.Compare(at) })
			if i == len(times) {
				f.DORA.Unrestored++
				continue
			}
			f.add(TimeToRestore, times[i].Sub(fl.at))
		}
	}
	return nil
}

// pauses adds the break-glass episodes at rev that started in the window
// to failures; a version of a break-glass record that cannot be used is
// listed in the report.
func (rd *Reader) pauses(ctx context.Context, rev string, rep *Report, since time.Time, fig func(app, env string) *Figures,
	failures map[[2]string][]failure) error {
	files, err := rd.Repo.ListTree(ctx, rev, breakglass.Dir)
	if err != nil {
		return fmt.Errorf("listing %s at %s: %w", breakglass.Dir, rev, err)
	}
	for _, file := range files {
		env, app, ok := names(file, breakglass.Dir, ".yaml") // breakglass/<env>/<app>.yaml
		if !ok {
			continue
		}
		episodes, invalid, err := rd.ledger().Pauses(ctx, rev, app, env)
		if err != nil {
			return err
		}
		for _, e := range invalid {
			rep.problem(fig(app, env), Problem{File: file, Reason: e.Error()})
		}
		pair := [2]string{app, env}
		for _, p := range episodes {
			if !since.IsZero() && p.At.Before(since) {
				continue
			}
			failures[pair] = append(failures[pair], failure{FailureBreakGlass, p.At})
		}
	}
	return nil
}

// summarize fills d's summaries from f's samples: the rate over the
// changes that reached the environment, deployments per day over window
// (0: no window).
func (d *DORA) summarize(f *Figures, window time.Duration) {
	d.LeadTime = durations(f.samples[LeadTime])
	d.TimeToRestore = durations(f.samples[TimeToRestore])
	failed := 0
	for _, n := range d.ChangeFailures {
		failed += n
	}
	d.ChangeFailureRate = 0
	if changes := d.Deployments + f.Outcomes[OutcomeHalted]; changes > 0 {
		d.ChangeFailureRate = float64(failed) / float64(changes)
	}
	d.DeploymentsPerDay = 0
	if window > 0 {
		d.DeploymentsPerDay = float64(d.Deployments) / window.Hours() * 24
	}
}

// merge adds o's counts to d (summarize after).
func (d *DORA) merge(o DORA) {
	d.Deployments += o.Deployments
	d.Unrestored += o.Unrestored
	for k, n := range o.ChangeFailures {
		d.ChangeFailures[k] += n
	}
}
