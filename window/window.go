// Package window decides when an environment accepts promotions: its
// windows (a cron schedule of openings, each lasting a duration, in a time
// zone, as Argo CD's sync windows) and its freezes (named date ranges
// without promotions). Every gate asks it at the time it runs, with the
// policy read at the base branch, and is refused with the next opening.
package window

import (
	"fmt"
	"strings"
	"time"
	// The IANA time zone database, embedded: the release image carries
	// none, and a window must open at one time on a laptop, in CI and in
	// the cluster.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// The rules of a closed environment (exitcode.Refusal.Rule).
const (
	// RuleOutsideWindow: no window of the environment is open.
	RuleOutsideWindow = "outside-window"
	// RuleFrozen: a freeze of the environment holds.
	RuleFrozen = "frozen"
)

// horizon bounds the search for the next opening: a schedule that opens
// less than once a year (or never outside the freezes) says so.
const horizon = 366 * 24 * time.Hour

// maxWindows and maxFreezes bound what one environment may list.
const (
	maxWindows = 32
	maxFreezes = 64
)

// Schedule is one environment's windows and freezes, checked.
type Schedule struct {
	env     string
	windows []window
	freezes []v1alpha1.Freeze
}

type window struct {
	field    string // environments.<env>.windows[i]
	sched    cron.Schedule
	duration time.Duration
	loc      *time.Location
}

// parser reads the five standard cron fields (no seconds, no descriptors
// other than cron's own @hourly etc.).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Compile checks env's windows and freezes; an error names the field
// (environments.<env>.windows[i].schedule, ...).
func Compile(env string, e v1alpha1.EnvironmentPolicy) (*Schedule, error) {
	field := "environments." + env
	if len(e.Windows) > maxWindows {
		return nil, fmt.Errorf("%s.windows: %d windows, at most %d", field, len(e.Windows), maxWindows)
	}
	if len(e.Freezes) > maxFreezes {
		return nil, fmt.Errorf("%s.freezes: %d freezes, at most %d", field, len(e.Freezes), maxFreezes)
	}
	switch e.RollbackInFreeze {
	case "", v1alpha1.RollbackInFreezeHold, v1alpha1.RollbackInFreezeAllow:
	default:
		return nil, fmt.Errorf("%s.rollbackInFreeze: %q: want %s or %s", field, e.RollbackInFreeze, v1alpha1.RollbackInFreezeHold,
			v1alpha1.RollbackInFreezeAllow)
	}
	s := &Schedule{env: env}
	for i, w := range e.Windows {
		f := fmt.Sprintf("%s.windows[%d]", field, i)
		if w.Schedule == "" {
			return nil, fmt.Errorf("%s.schedule: required (a cron expression, e.g. \"0 9 * * 1-4\")", f)
		}
		if w.TimeZone == "Local" {
			return nil, fmt.Errorf("%s.timeZone: \"Local\" depends on the machine: name an IANA time zone", f)
		}
		loc, err := time.LoadLocation(w.TimeZone) // "" is UTC
		if err != nil {
			return nil, fmt.Errorf("%s.timeZone: %q: %w", f, w.TimeZone, err)
		}
		if strings.HasPrefix(w.Schedule, "@every") {
			return nil, fmt.Errorf("%s.schedule: %q: @every has no fixed time of day: write the openings as a cron expression", f, w.Schedule)
		}
		if strings.Contains(w.Schedule, "TZ=") {
			return nil, fmt.Errorf("%s.schedule: %q: name the time zone in timeZone, not in the schedule", f, w.Schedule)
		}
		sched, err := parser.Parse(w.Schedule)
		if err != nil {
			return nil, fmt.Errorf("%s.schedule: %q: %w", f, w.Schedule, err)
		}
		d := w.Duration.Duration
		if d <= 0 || d > horizon {
			return nil, fmt.Errorf("%s.duration: %s: must be positive and at most %s", f, d, horizon)
		}
		s.windows = append(s.windows, window{field: f, sched: sched, duration: d, loc: loc})
	}
	names := map[string]bool{}
	for i, fr := range e.Freezes {
		f := fmt.Sprintf("%s.freezes[%d]", field, i)
		switch {
		case fr.Name == "":
			return nil, fmt.Errorf("%s.name: required (it names the freeze in every refusal)", f)
		case names[fr.Name]:
			return nil, fmt.Errorf("%s.name: %q: listed twice", f, fr.Name)
		case fr.From.IsZero() || fr.Until.IsZero():
			return nil, fmt.Errorf("%s: from and until are both required (RFC 3339 times)", f)
		case !fr.Until.After(fr.From.Time):
			return nil, fmt.Errorf("%s: until %s is not after from %s", f, stamp(fr.Until.Time), stamp(fr.From.Time))
		}
		names[fr.Name] = true
		s.freezes = append(s.freezes, fr)
	}
	return s, nil
}

// Closed says why an environment does not accept a promotion at a time.
type Closed struct {
	// Rule is RuleOutsideWindow or RuleFrozen.
	Rule string
	// Field is the policy field that closes it (the freeze, or the
	// environment's windows).
	Field string
	// Reason names the environment, the time, the freeze or the windows,
	// and the next opening.
	Reason string
	// Next is the next time the environment is open (zero: none within a
	// year).
	Next time.Time
}

// Check is nil when s accepts a promotion at t, else why not. A nil
// Schedule is always open.
func (s *Schedule) Check(t time.Time) *Closed {
	if s == nil {
		return nil
	}
	field, why := s.closed(t)
	if why == "" {
		return nil
	}
	c := &Closed{Rule: RuleOutsideWindow, Field: field, Next: s.next(t)}
	if field != "environments."+s.env+".windows" {
		c.Rule = RuleFrozen
	}
	next := "it opens again no sooner than a year from now"
	if !c.Next.IsZero() {
		next = "it opens next at " + stamp(c.Next)
	}
	c.Reason = fmt.Sprintf("%s does not accept promotions at %s: %s; %s", s.env, stamp(t), why, next)
	return c
}

// closed says which field closes s at t and why ("" when open).
func (s *Schedule) closed(t time.Time) (field, why string) {
	if i := s.freezeAt(t); i >= 0 {
		fr := s.freezes[i]
		why := fmt.Sprintf("freeze %q from %s until %s", fr.Name, stamp(fr.From.Time), stamp(fr.Until.Time))
		if fr.Reason != "" {
			why += " (" + fr.Reason + ")"
		}
		return fmt.Sprintf("environments.%s.freezes[%d]", s.env, i), why
	}
	if len(s.windows) == 0 {
		return "", ""
	}
	for _, w := range s.windows {
		if w.open(t) {
			return "", ""
		}
	}
	return "environments." + s.env + ".windows", fmt.Sprintf("outside its %d window(s)", len(s.windows))
}

// open reports whether an opening of w covers t: the first start after
// t-duration is at or before t.
func (w window) open(t time.Time) bool {
	start := w.sched.Next(t.In(w.loc).Add(-w.duration))
	return !start.IsZero() && !start.After(t)
}

// next is the first time after t at which s is open (zero when none
// within the horizon): a window's next start, or the end of a freeze.
func (s *Schedule) next(t time.Time) time.Time {
	end := t.Add(horizon)
	cur := t
	for i := 0; i < 10000 && cur.Before(end); i++ {
		cand := time.Time{}
		consider := func(c time.Time) {
			if c.After(cur) && (cand.IsZero() || c.Before(cand)) {
				cand = c
			}
		}
		for _, w := range s.windows {
			consider(w.sched.Next(cur.In(w.loc)))
		}
		for _, fr := range s.freezes {
			consider(fr.Until.Time)
		}
		if cand.IsZero() || cand.After(end) {
			return time.Time{}
		}
		if _, why := s.closed(cand); why == "" {
			return cand.UTC()
		}
		cur = cand
		if i := s.freezeAt(cand); i >= 0 {
			// Nothing inside the freeze opens: go on from its end (a
			// window every minute would otherwise be walked minute by minute).
			cur = s.freezes[i].Until.Add(-time.Nanosecond)
		}
	}
	return time.Time{}
}

// freezeAt is the index of the first freeze of s that holds at t (-1: none).
func (s *Schedule) freezeAt(t time.Time) int {
	for i, fr := range s.freezes {
		if !t.Before(fr.From.Time) && t.Before(fr.Until.Time) {
			return i
		}
	}
	return -1
}

// RollbackHeld reports whether e's windows and freezes hold a rollback.
func RollbackHeld(e v1alpha1.EnvironmentPolicy) bool {
	return e.RollbackInFreeze != v1alpha1.RollbackInFreezeAllow
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
