package chainview

import (
	"context"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/promotion"
)

// TestCandidacyChain: the documented first-environment path (promote
// candidate, then promote verify by the candidacy's own evidence) is
// proven, all nine arrows; a candidacy whose evidence departs from what
// its candidate commit sealed, or whose record was not committed by
// promote candidate, is not.
func TestCandidacyChain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		twist func(t *testing.T, f *chainfixture.Repo) string
		want  string // the arrows, p proven, b broken, n pending
		why   string // the summary of the first broken arrow
	}{{
		name: "accepted, verified by its candidacy",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			return f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1).Record.PromotionID
		},
		want: "ppppppppp",
	}, {
		name: "verified by its candidacy, not approved yet",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := f.Candidate("checkout", "dev", "1.5.0", chainfixture.Checkout, 1)
			must(t, rec.VerifyByCandidacy(f.Next(), "throughline promote verify"))
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("verified", map[string][]byte{promotion.RecordPath("checkout", "dev"): data})
			return rec.PromotionID
		},
		want: "pppppnnnn",
	}, {
		name: "a bundle replaced after the candidate commit sealed it",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			a := f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1)
			rec := a.Record
			rec.Artifact.Evidence.Items[1].Digest = "sha256:" + strings.Repeat("66", 32)
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("another provenance", map[string][]byte{promotion.RecordPath("checkout", "dev"): data})
			return rec.PromotionID
		},
		want: "pppbbpppp", why: "departs from what its candidacy sealed",
	}, {
		name: "a candidacy record committed by hand, without the seal",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := f.Candidate("checkout", "dev", "1.5.0", chainfixture.Checkout, 1)
			rec.Attempt, rec.PromotionID = 2, promotion.AttemptKey{App: "checkout", Digest: chainfixture.Checkout, Environment: "dev", Attempt: 2}.ID()
			rec.Artifact.Evidence.Candidacy = rec.PromotionID
			must(t, rec.VerifyByCandidacy(f.Next(), "hand"))
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("by hand", map[string][]byte{promotion.RecordPath("checkout", "dev"): data})
			return rec.PromotionID
		},
		want: "pppbbnnnn", why: "is not promote candidate's",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := chainfixture.New(t, example)
			id := tc.twist(t, f)
			m, err := Load(context.Background(), f.Repo, Options{Now: f.Next()})
			must(t, err)
			ch := m.Promotions[id]
			if ch == nil {
				t.Fatalf("no chain of %s", id)
			}
			got := ""
			for _, a := range ch.Arrows {
				got += map[Status]string{Proven: "p", Broken: "b", Pending: "n"}[a.Status]
			}
			if got != tc.want {
				t.Fatalf("arrows %s, want %s: %+v", got, tc.want, ch.Arrows)
			}
			if tc.why != "" && !strings.Contains(ch.FirstBroken().Summary, tc.why) {
				t.Fatalf("first broken arrow %s says %q, want %q", ch.FirstBroken().Name, ch.FirstBroken().Summary, tc.why)
			}
		})
	}
}
