package chainview

import (
	"context"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
)

// rewriteEvidence commits the evidence of checkout's record in
// production changed by edit, signed by the notifier (as a notifier key
// holder could).
func rewriteEvidence(t *testing.T, f *chainfixture.Repo, edit func(*evidence.Record)) string {
	t.Helper()
	const app, env = "checkout", "production"
	rec := mustRecord(t, f, app, env)
	file := evidence.Path(env, app, rec.PromotionID)
	data, err := f.Repo.ReadFile(context.Background(), "main", file)
	must(t, err)
	ev, err := evidence.Parse(file, data)
	must(t, err)
	edit(ev)
	data, err = ev.Marshal()
	must(t, err)
	f.Commit("rewrite "+file, map[string][]byte{file: data})
	return rec.PromotionID
}

// TestEvidenceShown: the promotion page's evidence (supply-chain bundles,
// runtime checks with their numbers and soak) says what the gates say of
// it, never more: a failed, missing or unsoaked check is broken, checks
// that passed in evidence that no longer proves the acceptance are not
// proven, a bundle replaced after its seal is broken.
func TestEvidenceShown(t *testing.T) {
	t.Parallel()
	const prod = "checkout-production-4b7e2a91c3d5-1"
	for _, tc := range []struct {
		name  string
		twist func(t *testing.T, f *chainfixture.Repo) string // the promotionId to look at
		// sets are the check sets, role:status; bundles the bundles'
		// statuses ("" none).
		sets, bundles string
		why           string // the summary of the last check set, or of the bundles
		value         string // a check's value the page must carry
	}{{
		name:  "the story: staging's and production's checks passed after their soak",
		twist: func(*testing.T, *chainfixture.Repo) string { return prod },
		sets:  "source:proven target:proven", why: "passed after a completed soak", value: "0.001",
	}, {
		name: "a check failed in the evidence the record claims ACCEPTED",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			return rewriteEvidence(t, f, func(ev *evidence.Record) {
				ev.Checks[0].Verdict, ev.Checks[0].Value = "Failed", "0.031"
			})
		},
		sets: "source:proven target:broken", why: "error-ratio (prometheus", value: "0.031",
	}, {
		name: "a declared check left out of the evidence",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			return rewriteEvidence(t, f, func(ev *evidence.Record) { ev.Checks = ev.Checks[1:] })
		},
		sets: "source:proven target:broken", why: "check error-ratio is not in the evidence",
	}, {
		name: "a soak shorter than declared",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			return rewriteEvidence(t, f, func(ev *evidence.Record) {
				started := ev.VerifiedAt.Add(-ev.VerifiedAt.Sub(*ev.SoakStartedAt) / 3)
				ev.SoakStartedAt = &started
			})
		},
		sets: "source:proven target:broken", why: "the evidence's soak lasted 10m0s",
	}, {
		name: "checks passed in evidence rewritten after the acceptance",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			return rewriteEvidence(t, f, func(ev *evidence.Record) { ev.Reason = "rewritten" })
		},
		sets: "source:proven target:pending", why: "does not prove the acceptance",
	}, {
		name: "a candidacy: its bundles, sealed by the candidate commit",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			return f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1).Record.PromotionID
		},
		sets: "target:none", bundles: "proven proven proven", why: "sealed by the candidate commit's message",
	}, {
		name: "a candidacy whose bundle was replaced after the seal",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1).Record
			rec.Artifact.Evidence.Items[1].Digest = "sha256:" + strings.Repeat("66", 32)
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("another provenance", map[string][]byte{promotion.RecordPath("checkout", "dev"): data})
			return rec.PromotionID
		},
		sets: "target:none", bundles: "broken broken broken", why: "departs from what its candidacy sealed",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := chainfixture.New(t, example)
			id := tc.twist(t, f)
			m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
			must(t, err)
			ch := m.Promotions[id]
			if ch == nil {
				t.Fatalf("no chain of %s", id)
			}
			var sets, bundles []string
			for _, s := range ch.CheckSets {
				sets = append(sets, s.Role+":"+string(s.Status))
				if s.File == "" || !promotion.ValidRevision(s.Commit) {
					t.Errorf("check set %s: file %q at %q, want a path and a commit", s.Role, s.File, s.Commit)
				}
			}
			for _, b := range ch.Bundles {
				bundles = append(bundles, string(b.Status))
				if b.Subject != ch.Record.Artifact.Digest || b.File != promotion.RecordPath(ch.Record.App, ch.Record.Target.Environment) {
					t.Errorf("bundle %s: subject %s in %s", b.Digest, b.Subject, b.File)
				}
			}
			if got := strings.Join(sets, " "); got != tc.sets {
				t.Errorf("check sets %q, want %q: %+v", got, tc.sets, ch.CheckSets)
			}
			if got := strings.Join(bundles, " "); got != tc.bundles {
				t.Errorf("bundles %q, want %q: %+v", got, tc.bundles, ch.Bundles)
			}
			why := ""
			if len(ch.Bundles) > 0 {
				why = ch.Bundles[0].Summary
				if tc.bundles == "proven proven" {
					sealed := f.Git("log", "--format=%H", "--grep", "Promotion: "+id, "main")
					if ch.Bundles[0].Commit != sealed {
						t.Errorf("bundle sealed at %s, want the candidate commit %s", ch.Bundles[0].Commit, sealed)
					}
				}
			} else if len(ch.CheckSets) > 0 {
				why = ch.CheckSets[len(ch.CheckSets)-1].Summary
			}
			if !strings.Contains(why, tc.why) {
				t.Errorf("says %q, want %q", why, tc.why)
			}
			if tc.value != "" {
				var b strings.Builder
				site, err := NewSite(m)
				must(t, err)
				_, err = site.Promotion(&b, id)
				must(t, err)
				if !strings.Contains(b.String(), "<td>"+tc.value+"</td>") {
					t.Errorf("the page shows no value %s", tc.value)
				}
			}
		})
	}
}
