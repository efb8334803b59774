package chainview

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

// The arrows of a record's target, in the chain's order.
const (
	sourceDesired  = 2
	targetDesired  = 6
	targetObserved = 7
	targetRuntime  = 8
)

// TestOCIChain: the controllers of staging and production pull an OCI
// artifact (the registry's source.oci). An ACCEPTED promotion from
// staging to production has all nine arrows proven, its desired arrows
// showing the artifact's digest and the commit it was built from (golden
// page). The attacks stay broken, with the gates' reasons: the controller
// pulled another digest, or the desired digest naming another commit
// (HALTED evidence); ACCEPTED without the evidence; a record claiming an
// OCI revision in a Git environment (dev), or a commit in an OCI one.
func TestOCIChain(t *testing.T) {
	t.Parallel()
	type want struct {
		status Status
		says   string
	}
	for _, tc := range []struct {
		name  string
		twist func(t *testing.T, f *chainfixture.Repo) string // the promotion id judged
		want  map[int]want
	}{
		{
			name:  "accepted",
			twist: func(t *testing.T, f *chainfixture.Repo) string { return "checkout-production-4b7e2a91c3d5-1" },
			want: map[int]want{
				targetDesired:  {Proven, "built from"},
				targetObserved: {Proven, "the desired artifact"},
				targetRuntime:  {Proven, "ACCEPTED"},
			},
		},
		{
			name: "another digest than the desired",
			twist: func(t *testing.T, f *chainfixture.Repo) string {
				rec, desired := f.Reconcile("web", "production", "2.1.0", chainfixture.Web, 1, f.FromDev)
				at := f.Next()
				ev := f.Evidence(rec, desired, at)
				ev.ObservedRevision = chainfixture.ArtifactOf(strings.Repeat("9", 40))
				ev.Decision, ev.Class, ev.Reason = promotion.Halted, "source", "the controller pulled another artifact"
				must(t, rec.Stop(promotion.Halted, ev.Reason, at, "throughline serve"))
				commitDecision(t, f, rec, ev)
				return rec.PromotionID
			},
			want: map[int]want{
				targetDesired:  {Proven, "built from"},
				targetObserved: {Broken, "is not the desired OCI artifact"},
				targetRuntime:  {Broken, "HALTED"},
			},
		},
		{
			name: "the desired digest built from another commit",
			twist: func(t *testing.T, f *chainfixture.Repo) string {
				rec, desired := f.Reconcile("web", "production", "2.1.0", chainfixture.Web, 1, f.FromDev)
				at := f.Next()
				ev := f.Evidence(rec, desired, at)
				ev.ObservedCommit = strings.Repeat("9", 40)
				ev.Decision, ev.Class, ev.Reason = promotion.Halted, "source", "the artifact names another commit"
				must(t, rec.Stop(promotion.Halted, ev.Reason, at, "throughline serve"))
				commitDecision(t, f, rec, ev)
				return rec.PromotionID
			},
			want: map[int]want{
				targetObserved: {Broken, "names commit 9999999999999999999999999999999999999999, not the desired"},
			},
		},
		{
			name: "ACCEPTED without the evidence",
			twist: func(t *testing.T, f *chainfixture.Repo) string {
				a := f.Accept("web", "production", "2.1.0", chainfixture.Web, 1, f.FromDev)
				f.Git("rm", "-q", a.Path, evidence.SignaturePath(a.Path))
				f.Commit("lose the evidence", nil)
				return a.Record.PromotionID
			},
			want: map[int]want{
				targetDesired:  {Proven, "built from"},
				targetObserved: {Broken, "there is no evidence"},
				targetRuntime:  {Broken, "was changed after the acceptance"},
			},
		},
		{
			name: "a commit claimed verified in an OCI environment",
			twist: func(t *testing.T, f *chainfixture.Repo) string {
				stag := mustRecord(t, f, "checkout", "staging")
				fromStaging := func(rec *promotion.Record, at time.Time) error {
					c := stag.Reconciling.DesiredCommit
					return rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: c, ObservedRevision: c,
						RenderedHash: stag.Target.RenderedHash, RuntimeEvidence: stag.Accepted.RuntimeEvidence}, at, "throughline promote verify")
				}
				rec, _ := f.Reconcile("checkout", "production", "1.5.0", chainfixture.Checkout, 2, fromStaging)
				return rec.PromotionID
			},
			want: map[int]want{
				sourceDesired:     {Broken, "is a commit, but environment staging's source is an OCI artifact"},
				sourceDesired + 1: {Broken, "is a commit, but environment staging's source is an OCI artifact"},
				sourceDesired + 2: {Broken, "verifiedIn is not what the evidence in Git proves"},
			},
		},
		{
			name: "an OCI revision in a Git environment",
			twist: func(t *testing.T, f *chainfixture.Repo) string {
				f.OCI["dev"] = true
				fromCI := func(rec *promotion.Record, at time.Time) error {
					ci := strings.Repeat("c", 40)
					return rec.Verify(promotion.VerifiedIn{Environment: "ci", DesiredRevision: ci, ObservedRevision: ci,
						RenderedHash: rec.Target.RenderedHash, RuntimeEvidence: evidence.Path("ci", rec.App, "ci")}, at, "throughline promote verify")
				}
				return f.Accept("web", "dev", "2.1.0", chainfixture.Web, 1, fromCI).Record.PromotionID
			},
			want: map[int]want{
				targetDesired:  {Broken, "is an OCI artifact, but environment dev's source is Git"},
				targetObserved: {Broken, "is an OCI artifact, but environment dev's source is Git"},
				targetRuntime:  {Broken, "is an OCI artifact, but environment dev's source is Git"},
			},
		},
		{
			name: "a commit in an OCI environment",
			twist: func(t *testing.T, f *chainfixture.Repo) string {
				f.OCI["production"] = false
				return f.Accept("web", "production", "2.1.0", chainfixture.Web, 1, f.FromDev).Record.PromotionID
			},
			want: map[int]want{
				targetDesired:  {Broken, "is a commit, but environment production's source is an OCI artifact"},
				targetObserved: {Broken, "is a commit, but environment production's source is an OCI artifact"},
				targetRuntime:  {Broken, "is a commit, but environment production's source is an OCI artifact"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := chainfixture.NewOCI(t, example)
			id := tc.twist(t, f)
			m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
			must(t, err)
			if len(m.Problems) > 0 {
				t.Fatalf("problems: %q", m.Problems)
			}
			ch := m.Promotions[id]
			if ch == nil {
				t.Fatalf("no chain of %s", id)
			}
			for i, w := range tc.want {
				a := ch.Arrows[i]
				if a.Status != w.status || !strings.Contains(a.Summary, w.says) {
					t.Errorf("arrow %s: %s %q, want %s saying %q", a.Name, a.Status, a.Summary, w.status, w.says)
				}
			}
			if tc.name != "accepted" {
				return
			}
			for _, a := range ch.Arrows {
				if a.Status != Proven {
					t.Errorf("arrow %s: %s %q, want proven", a.Name, a.Status, a.Summary)
				}
			}
			rec := ch.Record
			facts := fmt.Sprint(ch.Arrows[targetDesired].Facts)
			for _, v := range []string{rec.Reconciling.DesiredRevision, rec.Reconciling.DesiredCommit} {
				if !strings.Contains(facts, v) {
					t.Errorf("the desired arrow does not show %s: %s", v, facts)
				}
			}
			stag, err := promotion.ReadRecord(context.Background(), f.Repo, "main", "checkout", "staging")
			must(t, err)
			facts = fmt.Sprint(ch.Arrows[sourceDesired].Facts)
			for _, v := range []string{stag.Reconciling.DesiredRevision, stag.Reconciling.DesiredCommit} {
				if !strings.Contains(facts, v) {
					t.Errorf("the staging desired arrow does not show %s: %s", v, facts)
				}
			}
			s, err := NewSite(m)
			must(t, err)
			files, err := s.Files(context.Background())
			must(t, err)
			golden.Compare(t, "testdata/oci-accepted.html", files["promotion/"+id+".html"])
		})
	}
}

// commitDecision commits rec and its evidence ev as the notifier does.
func commitDecision(t *testing.T, f *chainfixture.Repo, rec *promotion.Record, ev *evidence.Record) {
	t.Helper()
	data, err := rec.Marshal()
	must(t, err)
	evData, err := ev.Marshal()
	must(t, err)
	f.Commit(rec.PromotionID+" "+string(rec.State), map[string][]byte{promotion.RecordPath(rec.App, rec.Target.Environment): data,
		evidence.Path(rec.Target.Environment, rec.App, rec.PromotionID): evData})
}
