package chainview

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

const apiDigest = "sha256:" + "9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d9d"

// handRecord is a record of api in env, for apiDigest, RECONCILING at
// desired with the approvals given, as a contributor could write it by
// hand (the record's schema knows no registry).
func handRecord(t *testing.T, f *chainfixture.Repo, env, desired string, approvers ...string) *promotion.Record {
	t.Helper()
	rec, err := promotion.NewCandidate("api", 1, promotion.Artifact{Image: "ghcr.io/throughline-dev/api:1.0.0@" + apiDigest, Digest: apiDigest,
		SourceCommit: strings.Repeat("9", 40)},
		promotion.Target{Environment: env, Path: "apps/api/overlays/" + env, Cluster: "c", RenderedHash: "sha256:" + strings.Repeat("9", 64),
			BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"}, f.Next(), "hand")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("d", 40), ObservedRevision: strings.Repeat("d", 40),
		RenderedHash: rec.Target.RenderedHash, RuntimeEvidence: "evidence/dev/api/x.json"}, f.Next(), "hand"))
	for _, a := range approvers {
		must(t, rec.AddApproval(a, rec.InputFor("v0.1.0"), f.Next().Add(48*time.Hour), f.Next(), len(approvers)))
	}
	must(t, rec.Reconcile(desired, f.Next(), "hand"))
	return rec
}

// pinned commits api's overlay in env pinning apiDigest: the desired commit.
func pinned(f *chainfixture.Repo, env string) string {
	return f.Commit("pin api in "+env, map[string][]byte{"apps/api/overlays/" + env + "/kustomization.yaml": []byte(
		"resources:\n  - ../../base\nimages:\n  - name: ghcr.io/throughline-dev/api\n    newTag: \"1.0.0@" + apiDigest + "\"\n")})
}

// accepted has rec ACCEPTED at observed, and its evidence (nil: none)
// changed by edit.
func accepted(t *testing.T, f *chainfixture.Repo, rec *promotion.Record, observed string, edit func(*evidence.Record)) map[string][]byte {
	t.Helper()
	file := evidence.Path(rec.Target.Environment, rec.App, rec.PromotionID)
	must(t, rec.Accept(observed, file, f.Next(), "hand"))
	data, err := rec.Marshal()
	must(t, err)
	files := map[string][]byte{promotion.RecordPath(rec.App, rec.Target.Environment): data}
	if edit != nil {
		ev := f.Evidence(rec, rec.Reconciling.DesiredRevision, f.Next())
		ev.Decision = promotion.Accepted
		ev.ObservedRevision = observed
		edit(ev)
		evData, err := ev.Marshal()
		must(t, err)
		files[file] = evData
	}
	return files
}

// TestArrowAttacks: what a careless or hostile contributor commits, and
// the arrow that must show it broken (never proven).
func TestArrowAttacks(t *testing.T) {
	t.Parallel()
	approvers := []string{"alice@example.com", "bob@example.com"}
	for _, tc := range []struct {
		name  string
		twist func(t *testing.T, f *chainfixture.Repo) string // commits the attack; the promotionId to look at
		arrow int                                             // 1-based
		want  string
		names string // a file the arrow must name (in its summary or facts)
	}{{
		name: "a record claiming ACCEPTED without an evidence file",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			f.Commit("accepted by hand", accepted(t, f, rec, rec.Reconciling.DesiredRevision, nil))
			return rec.PromotionID
		},
		arrow: 9, want: "does not exist",
	}, {
		name: "evidence for another digest than the record's",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			f.Commit("accepted", accepted(t, f, rec, rec.Reconciling.DesiredRevision, func(ev *evidence.Record) {
				ev.ArtifactDigest = chainfixture.Web
			}))
			return rec.PromotionID
		},
		arrow: 9, want: "is for digest " + chainfixture.Web,
	}, {
		name: "an observed revision on another line of history",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			orphan := f.Orphan()
			f.Commit("accepted", accepted(t, f, rec, orphan, func(ev *evidence.Record) { ev.Reason = "a later commit" }))
			return rec.PromotionID
		},
		arrow: 8, want: "is not a commit in the history of",
	}, {
		name: "an observed revision older than the desired commit, on an ACCEPTED record",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			before := f.Commit("before", nil)
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			f.Commit("accepted", accepted(t, f, rec, before, func(ev *evidence.Record) { ev.Reason = "a later commit" }))
			return rec.PromotionID
		},
		arrow: 8, want: "has not caught up",
	}, {
		name: "evidence of a Pod running another image, claimed ACCEPTED",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			f.Commit("accepted", accepted(t, f, rec, rec.Reconciling.DesiredRevision, func(ev *evidence.Record) {
				ev.Pods[0].ImageID = "ghcr.io/throughline-dev/api@" + chainfixture.WebOld
			}))
			return rec.PromotionID
		},
		arrow: 9, want: "not " + apiDigest,
	}, {
		name: "the evidence file rewritten after the acceptance",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			id := "checkout-production-4b7e2a91c3d5-1"
			file := evidence.Path("production", "checkout", id)
			ev := f.Evidence(mustRecord(t, f, "checkout", "production"), strings.Repeat("1", 40), f.Next())
			ev.Decision = promotion.Accepted
			data, err := ev.Marshal()
			must(t, err)
			f.Commit("rewrite the evidence", map[string][]byte{file: data})
			return id
		},
		arrow: 9, want: "was changed after the acceptance",
	}, {
		name: "evidence no notifier signed, claimed ACCEPTED",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			f.CommitUnsigned("accepted", accepted(t, f, rec, rec.Reconciling.DesiredRevision, func(*evidence.Record) {}))
			return rec.PromotionID
		},
		arrow: 9, want: "no signature file", names: evidence.Path("production", "api", "api-production-9d9d9d9d9d9d-1"),
	}, {
		name: "evidence signed by a key the policy does not list, claimed ACCEPTED",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			files := accepted(t, f, rec, rec.Reconciling.DesiredRevision, func(*evidence.Record) {})
			file := evidence.Path("production", "api", rec.PromotionID)
			files[evidence.SignaturePath(file)] = signedevidence.Sign(t, sshkey.NewNotifier(t, "production"), files[file])
			f.Commit("accepted", files)
			return rec.PromotionID
		},
		arrow: 9, want: sshkey.EvidenceSignersFile + " lists no such key", names: evidence.Path("production", "api", "api-production-9d9d9d9d9d9d-1"),
	}, {
		name: "evidence dated before the commit it observes (ledger.Prove refuses it)",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), approvers...)
			f.Commit("accepted", accepted(t, f, rec, rec.Reconciling.DesiredRevision, func(ev *evidence.Record) {
				ev.Time = chainfixture.T0.Add(-24 * time.Hour)
				before := ev.Time.Add(-time.Minute)
				ev.VerifiedAt = &before
			}))
			return rec.PromotionID
		},
		arrow: 9, want: "before the observed commit",
	}, {
		name: "evidence re-signed after the acceptance by a key the policy does not list",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			id := "checkout-production-4b7e2a91c3d5-1"
			file := evidence.Path("production", "checkout", id)
			data := []byte(f.Git("show", "main:"+file))
			f.Commit("re-sign", map[string][]byte{evidence.SignaturePath(file): signedevidence.Sign(t, sshkey.NewNotifier(t, "production"),
				append(data, '\n'))})
			return id
		},
		arrow: 9, want: "lists no such key",
	}, {
		name: "one approver where production requires two",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "production", pinned(f, "production"), "alice@example.com")
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("approved by one", map[string][]byte{promotion.RecordPath("api", "production"): data})
			return rec.PromotionID
		},
		arrow: 6, want: "1 distinct approvers signed, production requires 2",
	}, {
		name: "a desired commit whose overlay does not pin the digest",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "staging", f.Commit("nothing pinned", nil), "alice@example.com")
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("reconciling", map[string][]byte{promotion.RecordPath("api", "staging"): data})
			return rec.PromotionID
		},
		arrow: 7, want: "does not pin " + apiDigest,
	}, {
		name: "a desired commit that is not in the history",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "staging", f.Orphan(), "alice@example.com")
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("reconciling", map[string][]byte{promotion.RecordPath("api", "staging"): data})
			return rec.PromotionID
		},
		arrow: 7, want: "is not a commit in the history of",
	}, {
		name: "a VERIFIED claim of a source acceptance that does not exist",
		twist: func(t *testing.T, f *chainfixture.Repo) string {
			rec := handRecord(t, f, "staging", pinned(f, "staging"), "alice@example.com")
			data, err := rec.Marshal()
			must(t, err)
			f.Commit("reconciling", map[string][]byte{promotion.RecordPath("api", "staging"): data})
			return rec.PromotionID
		},
		arrow: 5, want: "promotion/api/dev.yaml does not exist",
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
			a := ch.Arrows[tc.arrow-1]
			if a.Status != Broken || !strings.Contains(a.Summary, tc.want) {
				t.Fatalf("arrow %d %s: %s %q, want broken saying %q", tc.arrow, a.Name, a.Status, a.Summary, tc.want)
			}
			if tc.names != "" && !strings.Contains(fmt.Sprint(a.Summary, a.Facts), tc.names) {
				t.Fatalf("arrow %d %s does not name %s: %q %v", tc.arrow, a.Name, tc.names, a.Summary, a.Facts)
			}
			if ch.Verdict() != Broken {
				t.Fatalf("chain %s, want broken", ch.Verdict())
			}
		})
	}
}

// TestArrowsOfTheStory: the verdicts of the untouched story.
func TestArrowsOfTheStory(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
	must(t, err)
	for id, want := range map[string]string{
		"checkout-production-4b7e2a91c3d5-1": "ppppppppp",
		"cart-production-a0a0a0a0a0a0-2":     "ppppppppp",
		"web-production-e0e0e0e0e0e0-1":      "ppppppppb",
		"checkout-staging-4b7e2a91c3d5-1":    "ppbbbpppp", // its dev claim has no record behind it
	} {
		ch := m.Promotions[id]
		if ch == nil {
			t.Fatalf("no chain of %s", id)
		}
		got := ""
		for _, a := range ch.Arrows {
			got += string(a.Status[0])
		}
		if got != want {
			t.Errorf("%s: arrows %s, want %s", id, got, want)
		}
	}
	for _, a := range m.Apps {
		for _, c := range a.Cells {
			if c.App == "search" && c.Environment == "staging" && !c.Paused() {
				t.Errorf("search in staging is not shown paused")
			}
		}
	}
}

// TestDrift: live digests against the declared one.
func TestDrift(t *testing.T) {
	t.Parallel()
	rec := &promotion.Record{Artifact: promotion.Artifact{Digest: chainfixture.Web}}
	for _, tc := range []struct {
		live Live
		want string
	}{
		{Live{Digests: []string{chainfixture.Web}}, ""},
		{Live{Digests: []string{chainfixture.Web, chainfixture.Search}}, ""}, // a sidecar
		{Live{Digests: []string{chainfixture.WebOld}}, "runs " + chainfixture.WebOld + ", Git declares " + chainfixture.Web},
		{Live{}, "nothing runs"},
	} {
		c := &Cell{App: "web", Environment: "production", Record: rec}
		c.drift(map[string]Live{Key("web", "production"): tc.live})
		if c.Drift != tc.want {
			t.Errorf("live %v: drift %q, want %q", tc.live.Digests, c.Drift, tc.want)
		}
	}
}

func mustRecord(t *testing.T, f *chainfixture.Repo, app, env string) *promotion.Record {
	t.Helper()
	rec, err := promotion.ReadRecord(context.Background(), f.Repo, "main", app, env)
	must(t, err)
	return rec
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOverrideFacts: the promotion PR's arrow lists each freeze override
// of the record (who, until when or expired, why), as the web view shows
// it; a record without overrides shows none.
func TestOverrideFacts(t *testing.T) {
	t.Parallel()
	rec, err := promotion.NewCandidate("api", 1, promotion.Artifact{Image: "ghcr.io/throughline-dev/api:1.0.0@" + apiDigest, Digest: apiDigest,
		SourceCommit: strings.Repeat("9", 40)},
		promotion.Target{Environment: "production", Path: "apps/api/overlays/production", Cluster: "c", RenderedHash: "sha256:" + strings.Repeat("9", 64),
			BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"}, time.Date(2026, 12, 22, 9, 0, 0, 0, time.UTC), "hand")
	must(t, err)
	at := time.Date(2026, 12, 22, 10, 0, 0, 0, time.UTC)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("d", 40), ObservedRevision: strings.Repeat("d", 40),
		RenderedHash: rec.Target.RenderedHash, RuntimeEvidence: "evidence/dev/api/x.json"}, at, "hand"))
	if facts := fmt.Sprint(approvalArrow(rec, 1, at).Facts); strings.Contains(facts, "override") {
		t.Fatalf("facts without an override: %s", facts)
	}
	must(t, rec.AddOverride("alice@example.com", "hotfix for the outage", rec.InputFor("v0.1.0"), at.Add(2*time.Hour), at))
	for now, want := range map[time.Time]string{
		at.Add(time.Hour):     "freeze override by alice@example.com until 2026-12-22T12:00:00Z: hotfix for the outage",
		at.Add(3 * time.Hour): "freeze override by alice@example.com expired at 2026-12-22T12:00:00Z: hotfix for the outage",
	} {
		found := false
		for _, f := range approvalArrow(rec, 1, now).Facts {
			found = found || f.Label == "overrides[0]" && f.Value == want
		}
		if !found {
			t.Errorf("at %s: facts %v, want %q", now, approvalArrow(rec, 1, now).Facts, want)
		}
	}
}
