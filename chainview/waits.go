package chainview

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/window"
)

// waits says what rec, in an environment requiring required distinct
// approvers, waits on at now, or why it stopped ("" for ACCEPTED: its
// chain says whether it is proven).
func waits(rec *promotion.Record, required int, now time.Time) string {
	n := len(approvalViews(rec, now))
	switch rec.State {
	case promotion.Candidate:
		return "waits on promote verify: no evidence verifies the digest yet"
	case promotion.Verified:
		return fmt.Sprintf("waits on approvals: %d of %d", n, max(required, 1))
	case promotion.Approved:
		s := fmt.Sprintf("approved (%d of %d): waits on the merge", n, max(required, 1))
		if a := rec.Approval; a != nil {
			s += ", the approval " + until(a.ExpiresAt, now, "expires", "expired")
		}
		return s
	case promotion.Reconciling:
		return "waits on the controller and the notifier's evidence"
	case promotion.Halted, promotion.Rejected:
		return fmt.Sprintf("%s: %s", lowerState(rec.State), rec.Reason)
	}
	return ""
}

func lowerState(s promotion.State) string {
	if s == promotion.Halted {
		return "halted"
	}
	return "rejected"
}

// until says when t comes relative to now: "<future> in 12m", or
// "<past> 3m ago".
func until(t, now time.Time, future, past string) string {
	d := t.Sub(now).Round(time.Minute)
	if d > 0 {
		return future + " in " + age(d)
	}
	return past + " " + age(-d) + " ago"
}

// deadline is when the notifier halts rec, RECONCILING in an environment
// of reg with a reconcileDeadline (zero: none), as the notifier counts it:
// from the record's last RECONCILING entry.
func deadline(rec *promotion.Record, reg *environment.Registry) time.Time {
	e, ok := reg.Get(rec.Target.Environment)
	if rec.State != promotion.Reconciling || !ok || e.ReconcileDeadline == nil {
		return time.Time{}
	}
	_, at, _ := rec.ReconcileDeadline(e.ReconcileDeadline.Duration)
	return at
}

// DeadlineText is the deadline of the cell's record relative to the
// model's time ("" without one).
func (c *Cell) DeadlineText(now time.Time) string {
	if c.Deadline.IsZero() {
		return ""
	}
	return until(c.Deadline, now, "deadline", "deadline passed")
}

// describe fills what every cell's record waits on (without its chain).
func (m *Model) describe(reg *environment.Registry) {
	for _, a := range m.Apps {
		for _, c := range a.Cells {
			if c.Record == nil {
				continue
			}
			c.Waits = m.waits(c.Record, reg)
			c.Deadline = deadline(c.Record, reg)
		}
	}
}

// waits is what rec (on the base branch or an attempt branch) waits on at
// m.Now, with its environment's approvals by reg, and that the
// environment is closed (closedNote): the one text of a cell and of an
// attempt in flight.
func (m *Model) waits(rec *promotion.Record, reg *environment.Registry) string {
	return waits(rec, requiredOf(reg, rec.Target.Environment), m.Now) + m.closedNote(rec)
}

// closedNote says, for a record on its way into an environment the policy
// closes now (CANDIDATE, VERIFIED, APPROVED), that it is closed, why and
// until when; a record that claims freeze overrides is told that promote
// check weighs them (the view does not judge them). "" otherwise.
func (m *Model) closedNote(rec *promotion.Record) string {
	switch rec.State {
	case promotion.Candidate, promotion.Verified, promotion.Approved:
	default:
		return ""
	}
	c := m.ClosedEnvironment(rec.Target.Environment)
	if c == nil {
		return ""
	}
	s := fmt.Sprintf("; %s is closed (%s) %s", c.Environment, closedWord(c.Rule), closedUntil(c.Next))
	if n := len(rec.Overrides); n > 0 {
		s += fmt.Sprintf(": promote check weighs the record's %d freeze override(s)", n)
	}
	return s
}

// ClosedEnvironment is env's entry of m.Closed (nil: open).
func (m *Model) ClosedEnvironment(env string) *gate.ClosedEnvironment {
	for i := range m.Closed {
		if m.Closed[i].Environment == env {
			return &m.Closed[i]
		}
	}
	return nil
}

// closedWord names a window.Closed rule in a few words.
func closedWord(rule string) string {
	if rule == window.RuleFrozen {
		return "frozen"
	}
	return "outside its windows"
}

// closedUntil says when a closed environment opens next.
func closedUntil(next time.Time) string {
	if next.IsZero() {
		return "for more than a year"
	}
	return "until " + next.UTC().Format(time.RFC3339)
}

// requiredOf is how many distinct approvers env requires by reg.
func requiredOf(reg *environment.Registry, env string) int {
	if e, ok := reg.Get(env); ok {
		return e.RequiredApprovals()
	}
	return 1
}

// inFlight puts every attempt open on its branch (rows, promote status
// --all) in its cell, with what it waits on: its record read at the
// branch's tip. An app with no record on the base branch gets its row.
func (m *Model) inFlight(ctx context.Context, repo *gitops.Repo, reg *environment.Registry, rows []ledger.StatusRow) error {
	for _, row := range rows {
		if row.Branch != ledger.BranchOpen {
			continue
		}
		c := m.cell(row.App, row.Environment)
		if c == nil {
			continue // an environment the grid has no column for
		}
		f := Flight{StatusRow: row}
		tip, err := repo.BranchTip(ctx, row.Ref)
		if err != nil {
			return fmt.Errorf("reading the attempt branch %s: %w", row.Ref, err)
		}
		rec, err := promotion.ReadRecord(ctx, repo, tip, row.App, row.Environment)
		switch {
		case err != nil:
			f.Waits = "its record cannot be read: " + err.Error()
		case rec == nil || rec.PromotionID != row.PromotionID:
			f.Waits = "its record is no longer on the branch"
		default:
			f.Tag = imageTag(rec.Artifact.Image)
			f.Waits = m.waits(rec, reg)
		}
		c.InFlight = append(c.InFlight, f)
	}
	return nil
}

// cell is app's cell in env, the app's row added (in order) when it has
// none; nil when env is not a column.
func (m *Model) cell(app, env string) *Cell {
	col := -1
	for i, e := range m.Environments {
		if e == env {
			col = i
		}
	}
	if col < 0 {
		return nil
	}
	i := sort.Search(len(m.Apps), func(i int) bool { return m.Apps[i].Name >= app })
	if i == len(m.Apps) || m.Apps[i].Name != app {
		row := &App{Name: app}
		for _, e := range m.Environments {
			row.Cells = append(row.Cells, &Cell{App: app, Environment: e})
		}
		m.Apps = append(m.Apps[:i], append([]*App{row}, m.Apps[i:]...)...)
	}
	return m.Apps[i].Cells[col]
}
