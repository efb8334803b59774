package chainview

import (
	"fmt"
	"io"
	"net/url"
	"slices"

	"github.com/throughline-dev/throughline/promotion"
)

// InFlightState is the state a Filter names for the cells with an attempt
// open on its branch.
const InFlightState = "IN-FLIGHT"

// states are the states counted and filtered, in the order of the state
// machine, then the attempts in flight.
var states = []string{string(promotion.Candidate), string(promotion.Verified), string(promotion.Approved), string(promotion.Reconciling),
	string(promotion.Accepted), string(promotion.Halted), string(promotion.Rejected), InFlightState}

// Filter narrows the grid: one app, one environment, the rows with a
// cell in one state (a record's state, or InFlightState); empty fields
// narrow nothing.
type Filter struct {
	App, Environment, State string
}

// ParseFilter reads a Filter from a query string (app, env, state); a
// value that is not a valid name or a known state is an error naming it.
func ParseFilter(q url.Values) (Filter, error) {
	f := Filter{App: q.Get("app"), Environment: q.Get("env"), State: q.Get("state")}
	switch {
	case f.App != "" && !promotion.ValidName(f.App):
		return Filter{}, fmt.Errorf("filter app %q: not an app name", f.App)
	case f.Environment != "" && !promotion.ValidName(f.Environment):
		return Filter{}, fmt.Errorf("filter env %q: not an environment name", f.Environment)
	case f.State != "" && !slices.Contains(states, f.State):
		return Filter{}, fmt.Errorf("filter state %q: want one of %v", f.State, states)
	}
	return f, nil
}

// Active reports whether f narrows anything.
func (f Filter) Active() bool { return f != Filter{} }

// StateCount is how many cells are in one state.
type StateCount struct {
	State string
	N     int
}

// Counts are the cells by state (a record's state; InFlightState counts
// the cells with an attempt open on its branch), states with none left
// out.
func (m *Model) Counts() []StateCount {
	n := map[string]int{}
	for _, a := range m.Apps {
		for _, c := range a.Cells {
			if c.Record != nil {
				n[string(c.Record.State)]++
			}
			if len(c.InFlight) > 0 {
				n[InFlightState]++
			}
		}
	}
	var out []StateCount
	for _, s := range states {
		if n[s] > 0 {
			out = append(out, StateCount{State: s, N: n[s]})
		}
	}
	return out
}

// filtered is m narrowed by f: its rows and columns only (the chains and
// histories are shared, not copied). Filtered by environment, an app with
// nothing there (no record, attempt or pause) has no row.
func (m *Model) filtered(f Filter) *Model {
	if !f.Active() {
		return m
	}
	out := *m
	col := -1
	if f.Environment != "" {
		col = slices.Index(m.Environments, f.Environment)
		out.Environments = nil
		if col >= 0 {
			out.Environments = []string{f.Environment}
		}
	}
	out.Apps = nil
	for _, a := range m.Apps {
		if f.App != "" && a.Name != f.App || f.Environment != "" && col < 0 {
			continue
		}
		cells := a.Cells
		if col >= 0 {
			cells = a.Cells[col : col+1]
		}
		if f.State != "" && !slices.ContainsFunc(cells, func(c *Cell) bool { return c.inState(f.State) }) {
			continue
		}
		if col >= 0 && cells[0].Record == nil && len(cells[0].InFlight) == 0 && cells[0].Pause == nil {
			continue // nothing of the app in the environment
		}
		row := *a
		row.Cells = cells
		out.Apps = append(out.Apps, &row)
	}
	return &out
}

// inState reports whether c's record is in state s, or, for
// InFlightState, c has an attempt open on its branch.
func (c *Cell) inState(s string) bool {
	if s == InFlightState {
		return len(c.InFlight) > 0
	}
	return c.Record != nil && string(c.Record.State) == s
}

// IndexFiltered writes the grid page narrowed by f, with links that
// filter (the served view: the query string is the filter; the static
// report links to each app's page instead).
func (s *Site) IndexFiltered(w io.Writer, f Filter) error {
	return s.execute(w, "index.tmpl", page{Model: s.m.filtered(f), Title: "Apps and environments", Counts: s.m.Counts(), Filter: f,
		Served: true})
}
