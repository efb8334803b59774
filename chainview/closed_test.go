package chainview

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/window"
)

// TestClosedEnvironmentsShown freezes production while an attempt waits on
// its branch for approvals: the grid says, without a click, that
// production is closed, by which freeze and until when (what promote
// status says below its table, read by the same function), in a section
// at the top, in production's column header and in the attempt's cell.
// Before, nothing in the view said production was frozen.
func TestClosedEnvironmentsShown(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	now := f.Next().Add(time.Hour)
	until := now.Add(36 * time.Hour).UTC().Truncate(time.Second)
	policy, err := os.ReadFile(filepath.Join(f.Dir, promotion.PolicyFile))
	must(t, err)
	freeze := fmt.Sprintf("  production:\n    freezes:\n      - {name: year-end, from: %q, until: %q}\n",
		now.Add(-time.Hour).UTC().Format(time.RFC3339), until.Format(time.RFC3339))
	frozen := strings.Replace(string(policy), "  production:\n", freeze, 1)
	if frozen == string(policy) {
		t.Fatal("the example's policy has no production entry to freeze")
	}
	f.Commit("production frozen for the year's end", map[string][]byte{promotion.PolicyFile: []byte(frozen)})
	prod := verifiedRecord(t, f, "production", "alice@example.com")
	branch := promotion.AttemptKey{App: "api", Digest: apiDigest, Environment: "production", Attempt: 1}.Branch()
	f.Git("checkout", "-q", "-b", branch)
	data, err := prod.Marshal()
	must(t, err)
	// The attempt's branch lifts the freeze in its own copy of the
	// policy: the view reads the policy at the base, as the gates do.
	f.Commit("api VERIFIED in production, approved by alice; production's freeze lifted here",
		map[string][]byte{promotion.RecordPath("api", "production"): data, promotion.PolicyFile: policy})
	f.Git("checkout", "-q", "main")

	m, err := Load(context.Background(), f.Repo, Options{Now: now})
	must(t, err)
	if len(m.Closed) != 1 || m.Closed[0].Environment != "production" || m.Closed[0].Rule != window.RuleFrozen || !m.Closed[0].Next.Equal(until) {
		t.Fatalf("closed %+v, want production frozen until %s", m.Closed, until)
	}
	var flight *Flight
	for _, a := range m.Apps {
		for _, c := range a.Cells {
			if c.Environment == "production" && len(c.InFlight) > 0 {
				flight = &c.InFlight[0]
			}
		}
	}
	stamp := until.Format(time.RFC3339)
	if flight == nil || !strings.HasPrefix(flight.Waits, "waits on approvals: 1 of 2; production is closed (frozen) until "+stamp) {
		t.Fatalf("the attempt in flight says %+v, want approvals 1 of 2 and production frozen until %s", flight, stamp)
	}
	s, err := NewSite(m)
	must(t, err)
	var buf bytes.Buffer
	must(t, s.Index(&buf))
	grid := buf.String()
	for _, want := range []string{
		`<h2 id="closed">Closed environments</h2>`,
		"production does not accept promotions at ",
		"year-end",
		"it opens next at " + stamp,
		`<span class="closed-env" title="frozen until ` + stamp + `">frozen</span>`,
	} {
		if !strings.Contains(grid, want) {
			t.Errorf("the grid does not say %q", want)
		}
	}
	// Open again after the freeze: nothing says closed.
	m, err = Load(context.Background(), f.Repo, Options{Now: until.Add(time.Minute)})
	must(t, err)
	if len(m.Closed) != 0 {
		t.Errorf("closed after the freeze: %+v", m.Closed)
	}
}

// TestServedGridSeesAFreezeEnd serves the grid while a freeze ends, with
// no commit in between: the page stops saying production is frozen once
// the freeze is over (the model was read again only when a branch moved,
// so a served page said "frozen" after the freeze had ended, and never
// showed a window closing). The handler's clock is moved, not waited for.
func TestServedGridSeesAFreezeEnd(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	start := f.Next()
	until := start.Add(time.Hour).UTC().Truncate(time.Second)
	policy, err := os.ReadFile(filepath.Join(f.Dir, promotion.PolicyFile))
	must(t, err)
	freeze := fmt.Sprintf("  production:\n    freezes:\n      - {name: launch, from: %q, until: %q}\n",
		start.Add(-time.Hour).UTC().Format(time.RFC3339), until.Format(time.RFC3339))
	f.Commit("production frozen for the launch", map[string][]byte{
		promotion.PolicyFile: []byte(strings.Replace(string(policy), "  production:\n", freeze, 1))})
	var mu sync.Mutex
	now := start
	h := &Handler{Repo: f.Repo, TTL: time.Nanosecond, clock: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	srv := httptest.NewServer(h)
	defer srv.Close()
	grid := func() string { return getPage(t, srv.URL+"/") }
	if g := grid(); !strings.Contains(g, `class="closed-env"`) {
		t.Fatal("the served grid does not say production is frozen")
	}
	mu.Lock()
	now = until.Add(time.Second)
	mu.Unlock()
	if g := grid(); strings.Contains(g, `class="closed-env"`) || strings.Contains(g, "Closed environments") {
		t.Fatal("the served grid still says production is frozen after the freeze ended")
	}
}

// TestClosedNote: which records are told their environment is closed, and
// how: only those on their way in (CANDIDATE, VERIFIED, APPROVED), never a
// RECONCILING, ACCEPTED, HALTED or REJECTED one or one in an open
// environment; the rule in words, the next opening or none within a year,
// and the freeze overrides a record claims left to promote check.
func TestClosedNote(t *testing.T) {
	t.Parallel()
	next := time.Date(2027, 1, 4, 9, 0, 0, 0, time.UTC)
	m := &Model{Closed: []gate.ClosedEnvironment{
		{Environment: "production", Closed: window.Closed{Rule: window.RuleFrozen, Next: next}},
		{Environment: "staging", Closed: window.Closed{Rule: window.RuleOutsideWindow}},
	}}
	rec := func(env string, state promotion.State, overrides int) *promotion.Record {
		r := &promotion.Record{State: state, Target: promotion.Target{Environment: env}}
		r.Overrides = make([]promotion.Override, overrides)
		return r
	}
	for _, tc := range []struct {
		name string
		rec  *promotion.Record
		want string
	}{
		{"verified into a freeze", rec("production", promotion.Verified, 0), "; production is closed (frozen) until 2027-01-04T09:00:00Z"},
		{"candidate", rec("production", promotion.Candidate, 0), "; production is closed (frozen) until 2027-01-04T09:00:00Z"},
		{"approved with overrides", rec("production", promotion.Approved, 2),
			"; production is closed (frozen) until 2027-01-04T09:00:00Z: promote check weighs the record's 2 freeze override(s)"},
		{"outside windows, none within a year", rec("staging", promotion.Approved, 0), "; staging is closed (outside its windows) for more than a year"},
		{"reconciling: merged already", rec("production", promotion.Reconciling, 0), ""},
		{"accepted", rec("production", promotion.Accepted, 0), ""},
		{"halted", rec("production", promotion.Halted, 0), ""},
		{"rejected", rec("production", promotion.Rejected, 0), ""},
		{"an open environment", rec("dev", promotion.Verified, 0), ""},
	} {
		if got := m.closedNote(tc.rec); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
