package delivery

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

var example = filepath.Join("..", "examples", "gitops-env")

// read is the report of the fixture's main at chainfixture.Now.
func read(t *testing.T, f *chainfixture.Repo, since time.Time) *Report {
	t.Helper()
	rep, err := Read(context.Background(), f.Repo, Options{Since: since, Now: chainfixture.Now})
	if err != nil {
		t.Fatal(err)
	}
	sane(t, rep)
	return rep
}

// sane fails on a negative or missing figure.
func sane(t *testing.T, rep *Report) {
	t.Helper()
	for _, f := range rep.Apps {
		for _, m := range Measured {
			for _, v := range f.Samples(m) {
				if v < 0 {
					t.Errorf("%s/%s %s: negative sample %g", f.App, f.Environment, m, v)
				}
			}
		}
		for _, d := range []Durations{f.OpenedToApproved, f.MergedToObserved, f.ObservedToAccepted} {
			if d.Median < 0 || d.P90 < d.Median || d.Max < d.P90 || d.Sum < 0 {
				t.Errorf("%s/%s: summary %+v", f.App, f.Environment, d)
			}
		}
		for _, c := range Classes {
			if _, ok := f.Halts[c]; !ok {
				t.Errorf("%s/%s: class %s not listed", f.App, f.Environment, c)
			}
		}
	}
}

func marshal(t *testing.T, rep *Report) []byte {
	t.Helper()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestDeliveryStory: the chain view's story (checkout to staging and
// production, web HALTED live in production, cart's two digests and its
// rollback, search in staging), all of it and from the middle of it on.
func TestDeliveryStory(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	rep := read(t, f, time.Time{})
	golden.Compare(t, "testdata/story.json", marshal(t, rep))
	if rep.Invalid != 0 || !rep.Registry {
		t.Fatalf("invalid %d, registry %v: %+v", rep.Invalid, rep.Registry, rep.Problems)
	}
	byKey := map[string]*Figures{}
	for _, fg := range rep.Apps {
		byKey[fg.App+"/"+fg.Environment] = fg
	}
	cart := byKey["cart/production"]
	if cart == nil || cart.Promotions != 2 || cart.Attempts != 3 || cart.AttemptsPerPromotion.Max != 2 {
		t.Fatalf("cart/production: %+v", cart)
	}
	web := byKey["web/production"]
	if web == nil || web.Halts[ClassLive] != 1 || web.Outcomes[OutcomeHalted] != 1 || web.MergedToObserved.Count != 1 ||
		web.ObservedToAccepted.Count != 0 {
		t.Fatalf("web/production: %+v", web)
	}
	prod := byKey["checkout/production"]
	if prod == nil || prod.OpenedToApproved.Median != (40*time.Minute).Seconds() || prod.ObservedToAccepted.Median != 60 ||
		prod.MergedToObserved.Median != (19*time.Minute).Seconds() {
		t.Fatalf("checkout/production: %+v", prod)
	}
	// From the fourth hour on: the first promotions ended before.
	late := read(t, f, chainfixture.T0.Add(4*time.Hour))
	golden.Compare(t, "testdata/window.json", marshal(t, late))
	if len(late.Apps) >= len(rep.Apps) {
		t.Fatalf("the window counts %d pairs, all of the history %d", len(late.Apps), len(rep.Apps))
	}
}

// fileEvidence is the evidence file p of the fixture's work tree.
func fileEvidence(t *testing.T, f *chainfixture.Repo, p string) *evidence.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.Dir, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.Parse(p, data)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func evidenceJSON(t *testing.T, ev *evidence.Record) []byte {
	t.Helper()
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	stagingEvidence = "evidence/staging/checkout/checkout-staging-4b7e2a91c3d5-1.json"
	prodEvidence    = "evidence/production/checkout/checkout-production-4b7e2a91c3d5-1.json"
)

// devVerified is a VERIFIED claim of a dev acceptance.
func devVerified(rec *promotion.Record, at time.Time) error {
	dev := strings.Repeat("d", 40)
	return rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: dev, ObservedRevision: dev, RenderedHash: rec.Target.RenderedHash,
		RuntimeEvidence: evidence.Path("dev", rec.App, "ci")}, at, "throughline promote verify")
}

// halt commits app HALTED in staging with evidence of class.
func halt(t *testing.T, f *chainfixture.Repo, app, digest, class string) {
	t.Helper()
	rec, desired := f.Reconcile(app, "staging", "9.9.9", digest, 1, devVerified)
	at := f.Next()
	ev := f.Evidence(rec, desired, at)
	ev.Decision, ev.Class, ev.Reason = promotion.Halted, class, "the error ratio 0.2 is above 0.01"
	if err := rec.Stop(promotion.Halted, ev.Reason, at, "throughline serve"); err != nil {
		t.Fatal(err)
	}
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.Commit(rec.PromotionID+" HALTED", map[string][]byte{promotion.RecordPath(app, "staging"): data,
		evidence.Path("staging", app, rec.PromotionID): evidenceJSON(t, ev)})
}

// TestDeliveryHostile: a repository written by a careless or hostile
// contributor never panics the report nor gives it a negative duration:
// what cannot be used is skipped, counted as invalid and named.
func TestDeliveryHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		twist        func(t *testing.T, f *chainfixture.Repo)
		file, reason string
		check        func(t *testing.T, rep *Report)
	}{{
		name: "record history in the wrong order",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			at := f.Next()
			rec, err := promotion.NewCandidate("late", 1, promotion.Artifact{Image: "ghcr.io/x/late:1@" + chainfixture.Web, Digest: chainfixture.Web,
				SourceCommit: strings.Repeat("1", 40)}, promotion.Target{Environment: "staging", Path: "apps/late/overlays/staging",
				Cluster: "staging-eu-1", RenderedHash: chainfixture.Web, BaseRenderedHash: chainfixture.Web, Renderer: "v0.1.0"}, at, "propose")
			if err == nil {
				err = devVerified(rec, at.Add(time.Hour))
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := rec.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			late := at.Add(time.Hour).Format(time.RFC3339)
			early := at.Add(-time.Hour).Format(time.RFC3339)
			f.Commit("a record whose VERIFIED precedes its CANDIDATE", map[string][]byte{
				"promotion/late/staging.yaml": []byte(strings.Replace(string(data), late, early, 1))})
		},
		file: "promotion/late/staging.yaml", reason: "is before the previous entry",
	}, {
		// The story's search pause, then a version of its break-glass
		// record that is not one: skipped and named, the pause still a
		// change failure.
		name: "malformed break-glass record",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			f.Commit("broken break-glass record", map[string][]byte{"breakglass/staging/search.yaml": []byte("schemaVersion: [")})
		},
		file: "breakglass/staging/search.yaml", reason: "breakglass/staging/search.yaml",
		check: func(t *testing.T, rep *Report) {
			if d := find(t, rep, "search", "staging").DORA; d.ChangeFailures[FailureBreakGlass] != 1 {
				t.Errorf("search/staging: %+v, want the pause counted once", d)
			}
		},
	}, {
		// A break-glass record naming another app than its path: not a
		// pause of either.
		name: "break-glass record of another app",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			data, err := f.Repo.ReadFile(context.Background(), "main", "breakglass/staging/search.yaml")
			if err != nil {
				t.Fatal(err)
			}
			f.Commit("search's pause filed under checkout", map[string][]byte{"breakglass/staging/checkout.yaml": data})
		},
		file: "breakglass/staging/checkout.yaml", reason: "search",
		check: func(t *testing.T, rep *Report) {
			if d := find(t, rep, "checkout", "staging").DORA; d.ChangeFailures[FailureBreakGlass] != 0 {
				t.Errorf("checkout/staging: %+v, want no pause", d)
			}
		},
	}, {
		name: "malformed evidence",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			f.Commit("broken evidence", map[string][]byte{prodEvidence: []byte(`{"schemaVersion": "evidence/v1", "app": `)})
		},
		file: prodEvidence, reason: "unexpected EOF",
		check: noEvidence,
	}, {
		name: "evidence no notifier signed",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			f.Git("rm", "-q", evidence.SignaturePath(prodEvidence))
			f.Commit("the evidence without its signature", nil)
		},
		file: prodEvidence, reason: "no signature file " + evidence.SignaturePath(prodEvidence),
		check: noEvidence,
	}, {
		name: "evidence signed by a key the policy does not list",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			data, err := os.ReadFile(filepath.Join(f.Dir, filepath.FromSlash(prodEvidence)))
			if err != nil {
				t.Fatal(err)
			}
			other := sshkey.NewNotifier(t, "production")
			f.Commit("the evidence signed by another key", map[string][]byte{evidence.SignaturePath(prodEvidence): signedevidence.Sign(t, other, data)})
		},
		file: prodEvidence, reason: sshkey.EvidenceSignersFile + " lists no such key",
		check: noEvidence,
	}, {
		name: "evidence of an unknown promotion",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			ev := fileEvidence(t, f, prodEvidence)
			ev.PromotionID = "checkout-production-4b7e2a91c3d5-7"
			f.Commit("evidence of no attempt", map[string][]byte{
				"evidence/production/checkout/checkout-production-4b7e2a91c3d5-7.json": evidenceJSON(t, ev)})
		},
		file: "evidence/production/checkout/checkout-production-4b7e2a91c3d5-7.json", reason: "no version of promotion/checkout/production.yaml",
	}, {
		name: "evidence filed under another promotion",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			ev := fileEvidence(t, f, prodEvidence)
			f.Commit("evidence under another name", map[string][]byte{
				"evidence/production/checkout/checkout-production-4b7e2a91c3d5-2.json": evidenceJSON(t, ev)})
		},
		file: "checkout-production-4b7e2a91c3d5-2.json", reason: "its file names checkout-production-4b7e2a91c3d5-2",
	}, {
		name: "evidence that contradicts the record",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			ev := fileEvidence(t, f, prodEvidence)
			ev.Decision, ev.Class, ev.Reason = promotion.Halted, "live", "made up"
			f.Commit("evidence that halts an accepted record", map[string][]byte{prodEvidence: evidenceJSON(t, ev)})
		},
		file: prodEvidence, reason: "it decides HALTED, the record of checkout-production-4b7e2a91c3d5-1 is ACCEPTED",
		check: func(t *testing.T, rep *Report) {
			if fg := find(t, rep, "checkout", "production"); fg.Halts["live"] != 0 {
				t.Errorf("a contradicting evidence counts a halt: %+v", fg.Halts)
			}
		},
	}, {
		name: "verified after the decision",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			accept(t, f, "late", func(ev *evidence.Record) {
				later := ev.Time.Add(time.Hour)
				ev.VerifiedAt = &later
			})
		},
		file: "evidence/staging/late/", reason: "is after its own ACCEPTED decision",
		check: unproven("late"),
	}, {
		name: "verified before the merge",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			accept(t, f, "early", func(ev *evidence.Record) {
				early := chainfixture.T0.Add(-time.Hour)
				ev.VerifiedAt = &early
			})
		},
		file: "evidence/staging/early/", reason: "is before the desired commit",
		check: unproven("early"),
	}, {
		// The gates refuse evidence older than the commit it observes
		// (ledger.Prove); the metrics judge it with the same function.
		name: "evidence dated before the commit it observes",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			accept(t, f, "old", func(ev *evidence.Record) { ev.Time = chainfixture.T0.Add(-24 * time.Hour) })
		},
		file: "evidence/staging/old/", reason: "before the observed commit",
		check: unproven("old"),
	}, {
		// Signed by the notifier's key, but not what was recorded with the
		// acceptance: the gates refuse it, so do the metrics.
		name: "evidence changed after the acceptance",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			ev := fileEvidence(t, f, stagingEvidence)
			earlier := ev.VerifiedAt.Add(-time.Minute)
			ev.VerifiedAt = &earlier
			f.Commit("the evidence rewritten after its acceptance", map[string][]byte{stagingEvidence: evidenceJSON(t, ev)})
		},
		file: stagingEvidence, reason: "was changed after the acceptance",
		check: func(t *testing.T, rep *Report) {
			if fg := find(t, rep, "checkout", "staging"); fg.MergedToObserved.Count != 0 || fg.ObservedToAccepted.Count != 0 {
				t.Errorf("evidence rewritten after the acceptance still counts: %+v", fg)
			}
		},
	}, {
		name: "failure classes, an unknown one counted as itself",
		twist: func(t *testing.T, f *chainfixture.Repo) {
			halt(t, f, "quota", "sha256:"+strings.Repeat("71", 32), "quota")
			halt(t, f, "slo", "sha256:"+strings.Repeat("72", 32), "runtime")
			halt(t, f, "blank", "sha256:"+strings.Repeat("73", 32), "")
		},
		check: func(t *testing.T, rep *Report) {
			for app, class := range map[string]string{"quota": "quota", "slo": ClassRuntime, "blank": ClassUnclassified} {
				if fg := find(t, rep, app, "staging"); fg.Halts[class] != 1 || fg.Outcomes[OutcomeHalted] != 1 {
					t.Errorf("%s: halts %v, want %s=1", app, fg.Halts, class)
				}
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := chainfixture.New(t, example)
			tc.twist(t, f)
			rep := read(t, f, time.Time{})
			if tc.file == "" && rep.Invalid != 0 {
				t.Fatalf("invalid %d: %+v", rep.Invalid, rep.Problems)
			}
			if tc.file != "" {
				found := false
				for _, p := range rep.Problems {
					found = found || strings.Contains(p.File, tc.file) && strings.Contains(p.Reason, tc.reason)
				}
				if !found || rep.Invalid != len(rep.Problems) {
					t.Fatalf("no problem naming %s (%s), invalid %d: %+v", tc.file, tc.reason, rep.Invalid, rep.Problems)
				}
			}
			if tc.check != nil {
				tc.check(t, rep)
			}
		})
	}
}

// accept commits app ACCEPTED in staging with the notifier's evidence
// (signed), twisted by twist in the commit that records the acceptance.
func accept(t *testing.T, f *chainfixture.Repo, app string, twist func(ev *evidence.Record)) {
	t.Helper()
	rec, desired := f.Reconcile(app, "staging", "9.9.9", "sha256:"+strings.Repeat("74", 32), 1, devVerified)
	at := f.Next()
	file := evidence.Path("staging", app, rec.PromotionID)
	if err := rec.Accept(rec.Reconciling.DesiredRevision, file, at, "throughline serve"); err != nil {
		t.Fatal(err)
	}
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ev := f.Evidence(rec, desired, at)
	ev.Decision = promotion.Accepted
	twist(ev)
	f.Commit(rec.PromotionID+" ACCEPTED", map[string][]byte{promotion.RecordPath(app, "staging"): data, file: evidenceJSON(t, ev)})
}

// unproven: app's ACCEPTED attempt in staging counts as accepted, without
// the figures of its evidence (which does not prove it).
func unproven(app string) func(t *testing.T, rep *Report) {
	return func(t *testing.T, rep *Report) {
		t.Helper()
		fg := find(t, rep, app, "staging")
		if fg.Outcomes[OutcomeAccepted] != 1 || fg.MergedToObserved.Count != 0 || fg.ObservedToAccepted.Count != 0 {
			t.Errorf("%s: unproven evidence counts: %+v", app, fg)
		}
	}
}

// noEvidence: checkout's ACCEPTED attempt in production still counts,
// without the figures of its evidence (prodEvidence is unusable).
func noEvidence(t *testing.T, rep *Report) {
	t.Helper()
	fg := find(t, rep, "checkout", "production")
	if fg.Outcomes[OutcomeAccepted] != 1 || fg.ObservedToAccepted.Count != 0 || fg.MergedToObserved.Count != 0 || fg.OpenedToApproved.Count != 1 {
		t.Errorf("the record still counts, without the evidence's figures: %+v", fg)
	}
}

func find(t *testing.T, rep *Report, app, env string) *Figures {
	t.Helper()
	for _, f := range rep.Apps {
		if f.App == app && f.Environment == env {
			return f
		}
	}
	t.Fatalf("no figures of %s in %s", app, env)
	return nil
}

// TestDeliveryBounded: only the registry's pairs keep their own figures
// (a record outside it is folded into _other), at most limit of them.
func TestDeliveryBounded(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	rec, desired := f.Reconcile("stray", "staging", "1.0.0", "sha256:"+strings.Repeat("74", 32), 1, devVerified)
	_ = desired
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The same record again under an overlay path the registry does not declare.
	moved := strings.ReplaceAll(string(data), "apps/stray/overlays/staging", "elsewhere/stray")
	f.Commit("a record outside the registry", map[string][]byte{promotion.RecordPath("stray", "staging"): []byte(moved)})
	rep := read(t, f, time.Time{})
	if rep.Invalid != 0 {
		t.Fatalf("invalid: %+v", rep.Problems)
	}
	all := rep.Bounded(100)
	last := all[len(all)-1]
	if last.App != Other || last.Attempts != 1 || len(all) != len(rep.Apps) {
		t.Fatalf("the stray record is not folded alone: %d of %d, last %+v", len(all), len(rep.Apps), last)
	}
	two := rep.Bounded(2)
	if len(two) != 3 || two[2].App != Other {
		t.Fatalf("Bounded(2): %d figures", len(two))
	}
	total := 0
	for _, fg := range two {
		total += fg.Attempts
	}
	want := 0
	for _, fg := range rep.Apps {
		want += fg.Attempts
	}
	if total != want {
		t.Fatalf("Bounded(2) counts %d attempts, the report %d", total, want)
	}
}

// TestDeliveryReaderRemembers: a second read of a later revision gives
// the same figures as a fresh reader.
func TestDeliveryReaderRemembers(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	rd := &Reader{Repo: f.Repo}
	ctx := context.Background()
	if _, err := rd.Read(ctx, Options{Now: chainfixture.Now}); err != nil {
		t.Fatal(err)
	}
	halt(t, f, "slo", "sha256:"+strings.Repeat("72", 32), "runtime")
	again, err := rd.Read(ctx, Options{Now: chainfixture.Now})
	if err != nil {
		t.Fatal(err)
	}
	fresh := read(t, f, time.Time{})
	if a, b := marshal(t, again), marshal(t, fresh); string(a) != string(b) {
		t.Fatalf("remembered:\n%s\nfresh:\n%s", a, b)
	}
}

// TestDORAStory: the four keys of the chain view's story, each pair's
// figures as the story makes them: checkout through staging to production,
// web HALTED in production and never restored, cart rolled back (a
// deployment, a failure restored by its own acceptance, no lead time),
// search paused by break-glass after its acceptance.
func TestDORAStory(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	rep := read(t, f, time.Time{})
	for _, tc := range []struct {
		pair                 string
		deployments, leads   int
		lead                 time.Duration
		failures             map[string]int
		rate                 float64
		restores, unrestored int
		restore              time.Duration
	}{
		{"checkout/staging", 1, 1, 50 * time.Minute, nil, 0, 0, 0, 0},
		// From staging's candidacy: the artifact's lead time spans both.
		{"checkout/production", 1, 1, 2 * time.Hour, nil, 0, 0, 0, 0},
		{"web/production", 0, 0, 0, map[string]int{FailureHalted: 1}, 1, 0, 1, 0},
		{"cart/production", 3, 2, time.Hour, map[string]int{FailureRollback: 1}, 1.0 / 3, 1, 0, time.Hour},
		{"search/staging", 1, 1, 50 * time.Minute, map[string]int{FailureBreakGlass: 1}, 1, 0, 1, 0},
	} {
		app, env, _ := strings.Cut(tc.pair, "/")
		d := find(t, rep, app, env).DORA
		failures := map[string]int{FailureHalted: 0, FailureRollback: 0, FailureBreakGlass: 0}
		for k, n := range tc.failures {
			failures[k] = n
		}
		if d.Deployments != tc.deployments || d.LeadTime.Count != tc.leads || d.LeadTime.Median != tc.lead.Seconds() ||
			!maps.Equal(d.ChangeFailures, failures) || math.Abs(d.ChangeFailureRate-tc.rate) > 1e-9 ||
			d.TimeToRestore.Count != tc.restores || d.TimeToRestore.Median != tc.restore.Seconds() || d.Unrestored != tc.unrestored {
			t.Errorf("%s: %+v", tc.pair, d)
		}
		if d.DeploymentsPerDay != 0 {
			t.Errorf("%s: %g deployments per day without a window", tc.pair, d.DeploymentsPerDay)
		}
	}
	// Over the story's last 50 hours (two days and two hours): the same
	// deployments, per day.
	window := read(t, f, chainfixture.T0)
	if d := find(t, window, "cart", "production").DORA; d.Deployments != 3 || math.Abs(d.DeploymentsPerDay-3/(50.0/24)) > 1e-9 {
		t.Errorf("cart/production over a day: %+v", d)
	}
}
