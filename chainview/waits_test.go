package chainview

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

// verifiedRecord is a record of api in env for apiDigest, VERIFIED with
// the approvals given (fewer than env requires).
func verifiedRecord(t *testing.T, f *chainfixture.Repo, env string, approvers ...string) *promotion.Record {
	t.Helper()
	rec, err := promotion.NewCandidate("api", 1, promotion.Artifact{Image: "ghcr.io/throughline-dev/api:1.0.0@" + apiDigest, Digest: apiDigest,
		SourceCommit: strings.Repeat("9", 40)},
		promotion.Target{Environment: env, Path: "apps/api/overlays/" + env, Cluster: "c", RenderedHash: "sha256:" + strings.Repeat("9", 64),
			BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"}, f.Next(), "hand")
	must(t, err)
	must(t, f.FromDev(rec, f.Next()))
	for _, a := range approvers {
		must(t, rec.AddApproval(a, rec.InputFor("v0.1.0"), f.Next().Add(48*time.Hour), f.Next(), 2))
	}
	return rec
}

// TestCellsSayWhy: each cell of the grid says, without a click, what its
// record waits on or why it stopped: a HALTED record's reason, approvals
// 1 of 2, the reconcileDeadline of a RECONCILING record; and an attempt
// open on its branch is shown in its target cell (not "no record") with
// what it waits on.
func TestCellsSayWhy(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	// api in staging: RECONCILING, staging's reconcileDeadline is 15m.
	rec := handRecord(t, f, "staging", pinned(f, "staging"), "alice@example.com")
	data, err := rec.Marshal()
	must(t, err)
	f.Commit("api RECONCILING in staging", map[string][]byte{promotion.RecordPath("api", "staging"): data})
	reconciling := rec.History[len(rec.History)-1].At
	// api in production: VERIFIED, one approval of the two production
	// requires, on its attempt branch only.
	prod := verifiedRecord(t, f, "production", "alice@example.com")
	branch := promotion.AttemptKey{App: "api", Digest: apiDigest, Environment: "production", Attempt: 1}.Branch()
	f.Git("checkout", "-q", "-b", branch)
	data, err = prod.Marshal()
	must(t, err)
	f.Commit("api VERIFIED in production, approved by alice", map[string][]byte{promotion.RecordPath("api", "production"): data})
	f.Git("checkout", "-q", "main")

	now := reconciling.Add(3 * time.Minute)
	m, err := Load(context.Background(), f.Repo, Options{Now: now})
	must(t, err)
	cells := map[string]*Cell{}
	for _, a := range m.Apps {
		for _, c := range a.Cells {
			cells[Key(c.App, c.Environment)] = c
		}
	}
	web := cells[Key("web", "production")]
	if !strings.Contains(web.Waits, "halted: Pod web-5f7c9d8b6-x2k4p") {
		t.Errorf("web in production says %q, want its HALTED reason", web.Waits)
	}
	stag := cells[Key("api", "staging")]
	if got := stag.DeadlineText(m.Now); got != "deadline in 12m0s" {
		t.Errorf("api in staging: deadline %q, want in 12m0s (15m after RECONCILING at %s, now %s)", got, reconciling, now)
	}
	if want := "waits on the controller and the notifier's evidence; chain broken at dev desired commit: "; !strings.HasPrefix(stag.Waits, want) {
		t.Errorf("api in staging says %q, want %q... (what it waits on, and its claim of a dev acceptance Git does not hold)", stag.Waits, want)
	}
	fl := cells[Key("api", "production")].InFlight
	if len(fl) != 1 || fl[0].Ref != branch || fl[0].State != promotion.Verified || fl[0].Waits != "waits on approvals: 1 of 2" {
		t.Fatalf("api in production in flight: %+v, want %s VERIFIED waiting on approvals 1 of 2", fl, branch)
	}
	s, err := NewSite(m)
	must(t, err)
	var buf bytes.Buffer
	must(t, s.Index(&buf))
	golden.Compare(t, "testdata/grid-waits.html", buf.Bytes())
	grid := buf.String()
	for _, want := range []string{"halted: Pod web-5f7c9d8b6-x2k4p", "deadline in 12m0s", "in flight on <code>" + branch + "</code>",
		"waits on approvals: 1 of 2"} {
		if !strings.Contains(grid, want) {
			t.Errorf("the grid does not say %q", want)
		}
	}
	row := grid[strings.Index(grid, `<a href="app/api.html">`):]
	row = row[:strings.Index(row, "</tr>")]
	if strings.Count(row, "no record") != 1 { // dev only
		t.Errorf("api's row says %d times no record, want once (dev):\n%s", strings.Count(row, "no record"), row)
	}
}
