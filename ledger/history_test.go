package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

var (
	dA = "sha256:" + strings.Repeat("a", 64)
	dB = "sha256:" + strings.Repeat("b", 64)
	dC = "sha256:" + strings.Repeat("c", 64)
	dD = "sha256:" + strings.Repeat("d", 64)
	h1 = "sha256:" + strings.Repeat("1", 64)
	t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
)

// gitRepo is a real Git repository in a temporary directory whose
// policy lists the notifier's key (evidenceSigners): commit signs every
// evidence file it writes with it, as the notifier does.
type gitRepo struct {
	t        *testing.T
	dir      string
	notifier sshkey.Notifier
}

func newGitRepo(t *testing.T) *gitRepo {
	g := &gitRepo{t: t, dir: t.TempDir(), notifier: sshkey.NewNotifier(t, "staging", "production")}
	gittest.Init(t, g.dir)
	gittest.Commit(t, g.dir, "policy: the notifier's key", map[string]string{
		promotion.PolicyFile: sshkey.Policy, sshkey.EvidenceSignersFile: g.notifier.Line()})
	return g
}

func (g *gitRepo) git(args ...string) string {
	g.t.Helper()
	return gittest.Run(g.t, g.dir, args...)
}

// desire commits a change of production's overlay (what a promotion
// merges) and returns its id: the desired and observed revision of an
// acceptance, a real commit of the history.
func (g *gitRepo) desire(name string) string {
	g.t.Helper()
	return gittest.Commit(g.t, g.dir, "production desires "+name, map[string]string{"apps/web/overlays/production/desired": name + "\n"})
}

// commit writes files (relative path -> content) and commits them.
func (g *gitRepo) commit(msg string, files map[string][]byte) string {
	g.t.Helper()
	text := make(map[string]string, len(files))
	for p, data := range files {
		text[p] = string(data)
	}
	signedevidence.SignAll(g.t, g.notifier, text)
	return gittest.Commit(g.t, g.dir, msg, text)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// acceptedRecord is the production record of web, attempt n of digest,
// ACCEPTED at desired revision rev, as the notifier leaves it.
func acceptedRecord(t *testing.T, n int, digest, rev string) *promotion.Record {
	t.Helper()
	rec, err := promotion.NewCandidate("web", n, promotion.Artifact{Image: "r.example/web@" + digest, Digest: digest, SourceCommit: strings.Repeat("5", 40)},
		promotion.Target{Environment: "production", Path: "apps/web/overlays/production", Cluster: "production", RenderedHash: h1, BaseRenderedHash: h1, Renderer: "v1"}, t0, "test")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("6", 40), ObservedRevision: strings.Repeat("6", 40), RenderedHash: h1, RuntimeEvidence: "evidence/staging/web/x.json"}, t0, "test"))
	must(t, rec.Approve("alice", rec.InputFor("v1"), t0.Add(time.Hour), t0))
	must(t, rec.Reconcile(rev, t0, "test"))
	must(t, rec.Accept(rev, promotion.PriorEvidencePath("production", "web", rec.PromotionID), t0, "notifier"))
	return rec
}

// evidenceOf is the evidence file the notifier writes for rec.
func evidenceOf(t *testing.T, rec *promotion.Record, decision promotion.State, digest string) []byte {
	t.Helper()
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: rec.App, Environment: rec.Target.Environment, PromotionID: rec.PromotionID,
		Decision: decision, Image: rec.Artifact.Image, ArtifactDigest: digest, DesiredRevision: rec.Reconciling.DesiredRevision,
		ObservedRevision: rec.Reconciling.DesiredRevision, ReportedBy: evidence.Reporter{Source: "flux"}, Time: time.Now().UTC().Truncate(time.Second),
		Pods: runs(digest)}
	if decision == promotion.Halted {
		ev.Reason = "image mismatch"
	}
	data, err := ev.Marshal()
	must(t, err)
	return data
}

// runs is the Pods of a notifier's evidence: one Pod of web running digest.
func runs(digest string) []evidence.Pod {
	return []evidence.Pod{{Workload: "Deployment/web-production/web", Container: "web", Pod: "web-1", Pods: 1, Declared: digest,
		ImageID: "r.example/web@" + digest, Outcome: "Verified", Match: "Exact"}}
}

func files(t *testing.T, rec *promotion.Record, ev []byte) map[string][]byte {
	t.Helper()
	data, err := rec.Marshal()
	must(t, err)
	m := map[string][]byte{promotion.RecordPath("web", "production"): data}
	if ev != nil {
		m[promotion.PriorEvidencePath("production", "web", rec.PromotionID)] = ev
	}
	return m
}

// history is production's story: A accepted with evidence, B "accepted"
// without evidence, C accepted with evidence of another digest, an
// evidence file for D whose record never said ACCEPTED, then B accepted
// properly as attempt 2 (desired now).
type history struct {
	g                        *gitRepo
	repo                     *gitops.Repo
	recA, recB, recC, recB2  *promotion.Record
	cA, cB, cC, cD, cB2, tip string
}

// ids are the replacements of the history's commit ids (and their 12
// character prefixes), and of more, by names for golden files: a commit id
// changes from run to run (the commit time is now).
func (h *history) ids(more ...string) []string {
	var r []string
	for i, c := range append([]string{h.cA, h.cB, h.cC, h.cD, h.cB2}, more...) {
		name := fmt.Sprintf("<commit %d>", i)
		if i < 5 {
			name = []string{"<A>", "<B>", "<C>", "<D>", "<B2>"}[i]
		}
		r = append(r, c, name, c[:12], name)
	}
	for name, rec := range map[string]*promotion.Record{"A": h.recA, "B": h.recB, "C": h.recC, "B2": h.recB2} {
		d := rec.Reconciling.DesiredRevision
		r = append(r, d, "<desired "+name+">", d[:12], "<desired "+name+">")
	}
	return r
}

func newHistory(t *testing.T) *history {
	h := &history{g: newGitRepo(t)}
	rev := h.g.desire
	h.recA = acceptedRecord(t, 1, dA, rev("A"))
	h.cA = h.g.commit("A accepted", files(t, h.recA, evidenceOf(t, h.recA, promotion.Accepted, dA)))
	h.recB = acceptedRecord(t, 1, dB, rev("B"))
	h.cB = h.g.commit("B accepted by hand, no evidence", files(t, h.recB, nil))
	h.recC = acceptedRecord(t, 1, dC, rev("C"))
	h.cC = h.g.commit("C accepted, evidence of another digest", files(t, h.recC, evidenceOf(t, h.recC, promotion.Accepted, dD)))
	recD := acceptedRecord(t, 1, dD, rev("D"))
	h.cD = h.g.commit("D evidence only", map[string][]byte{promotion.PriorEvidencePath("production", "web", recD.PromotionID): evidenceOf(t, recD, promotion.Accepted, dD)})
	h.recB2 = acceptedRecord(t, 2, dB, rev("B2"))
	h.cB2 = h.g.commit("B accepted as attempt 2", files(t, h.recB2, evidenceOf(t, h.recB2, promotion.Accepted, dB)))
	h.tip = h.cB2
	var err error
	h.repo, err = gitops.OpenLocal(context.Background(), h.g.dir)
	must(t, err)
	return h
}

func TestHistoryCountsOnlyProvenAcceptances(t *testing.T) {
	t.Parallel()
	h := newHistory(t)
	l, err := History(context.Background(), h.repo, "main", "web", "production")
	must(t, err)
	var got []string
	for _, a := range l.Accepted {
		got = append(got, a.PromotionID+"@"+a.Commit[:7])
	}
	want := []string{h.recB2.PromotionID + "@" + h.cB2[:7], h.recA.PromotionID + "@" + h.cA[:7]}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("accepted %v, want %v", got, want)
	}
	a := l.Accepted[1]
	if a.Evidence != "evidence/production/web/"+h.recA.PromotionID+".json" || a.DesiredRevision != h.recA.Reconciling.DesiredRevision || a.RenderedHash != h1 {
		t.Fatalf("acceptance of A: %+v", a)
	}
	if l.Attempts[dB] != 2 || l.Attempts[dA] != 1 {
		t.Fatalf("attempts %v", l.Attempts)
	}
	reasons := map[string]string{}
	for _, u := range l.Unproven {
		reasons[u.PromotionID] = u.Reason
	}
	for id, want := range map[string]string{
		h.recB.PromotionID: "which does not exist at",
		h.recC.PromotionID: "is for digest " + dD,
		strings.Replace(h.recB.PromotionID, "bbbbbbbbbbbb", "dddddddddddd", 1): "was never ACCEPTED",
	} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("unproven %s: %q, want it to say %q (all: %v)", id, reasons[id], want, reasons)
		}
	}
	// Pick refuses the unproven digests, naming why, and skips them for
	// "previous".
	record := golden.ErrorLines(t, "testdata/pick-unproven.golden", 2, h.ids()...)
	for _, d := range []string{dC, dD} {
		_, err := Pick(l, d, dB, "production")
		var re *exitcode.Refusal
		if !errors.As(err, &re) || re.Rule != RuleTarget {
			t.Errorf("pick %s: %v", d, err)
		}
		record(d, err)
	}
	if p, err := Pick(l, Previous, dB, "production"); err != nil || p.Artifact.Digest != dA {
		t.Fatalf("previous: %+v %v", p, err)
	}
}

// TestHistoryProvesLikeTheGates: a rollback target is proven by the same
// proof as a promotion's source (Prove): evidence whose revisions are not
// commits of the history, dated before the commit it observed, or whose
// Pods ran another image does not make a digest a rollback target.
func TestHistoryProvesLikeTheGates(t *testing.T) {
	t.Parallel()
	other := "sha256:" + strings.Repeat("e", 64)
	for _, tc := range []struct {
		name   string
		rev    func(g *gitRepo) string
		edit   func(ev *evidence.Record)
		reason string
	}{
		{"revisions that are commits of no repository", func(*gitRepo) string { return strings.Repeat("ab", 20) }, nil,
			"is not a commit in the history of"},
		{"dated before the commit it observed", nil, func(ev *evidence.Record) { ev.Time = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC) },
			"before the observed commit"},
		{"a Pod running another image", nil, func(ev *evidence.Record) { ev.Pods[0].ImageID = "r.example/web@" + other },
			"runs imageID r.example/web@" + other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			g := newGitRepo(t)
			rev := g.desire("A")
			if tc.rev != nil {
				rev = tc.rev(g)
			}
			rec := acceptedRecord(t, 1, dA, rev)
			data := evidenceOf(t, rec, promotion.Accepted, dA)
			if tc.edit != nil {
				ev, err := evidence.Parse("ev.json", data)
				must(t, err)
				tc.edit(ev)
				data, err = ev.Marshal()
				must(t, err)
			}
			g.commit("A accepted", files(t, rec, data))
			repo, err := gitops.OpenLocal(ctx, g.dir)
			must(t, err)
			l, err := History(ctx, repo, "main", "web", "production")
			must(t, err)
			if len(l.Accepted) != 0 || len(l.Unproven) != 1 || !strings.Contains(l.Unproven[0].Reason, tc.reason) {
				t.Fatalf("accepted %+v, unproven %+v: want A unproven because %q", l.Accepted, l.Unproven, tc.reason)
			}
		})
	}
}

// TestHistoryNeedsNotifierKeys: evidence counts only signed by a key the
// policy at the rollback's start lists. A pull request that drops
// evidenceSigners, or lists another key, leaves nothing proven: no
// acceptance is taken on a file's word.
func TestHistoryNeedsNotifierKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, policy, signers, reason string
	}{
		{"no evidenceSigners", "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\n", "", "the policy lists no evidenceSigners"},
		{"another key", sshkey.Policy, sshkey.NewNotifier(t, "production").Line(), "lists no such key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHistory(t)
			files := map[string]string{promotion.PolicyFile: tc.policy}
			if tc.signers != "" {
				files[sshkey.EvidenceSignersFile] = tc.signers
			}
			gittest.Commit(t, h.g.dir, "policy: "+tc.name, files)
			l, err := History(context.Background(), h.repo, "main", "web", "production")
			must(t, err)
			if len(l.Accepted) != 0 {
				t.Fatalf("accepted %+v with %s", l.Accepted, tc.name)
			}
			if len(l.Unproven) == 0 || !strings.Contains(l.Unproven[0].Reason, tc.reason) {
				t.Fatalf("unproven %+v, want the first to say %q", l.Unproven, tc.reason)
			}
		})
	}
}

// rollbackRecord is the rollback of web in production to the acceptance
// a, VERIFIED by it, as throughline rollback writes it.
func rollbackRecord(t *testing.T, a Accepted, attempt int) *promotion.Record {
	t.Helper()
	rec, err := promotion.NewCandidate("web", attempt, a.Artifact,
		promotion.Target{Environment: "production", Path: "apps/web/overlays/production", Cluster: "production", RenderedHash: h1, BaseRenderedHash: h1, Renderer: "v1"}, t0, "throughline rollback")
	must(t, err)
	must(t, rec.VerifyByPriorAcceptance(a.Prior(), a.DesiredRevision, a.ObservedRevision, a.RenderedHash, t0, "throughline rollback"))
	return rec
}

func TestCheckPrior(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHistory(t)
	l, err := History(ctx, h.repo, "main", "web", "production")
	must(t, err)
	a := l.Accepted[1]
	must(t, CheckPrior(ctx, h.repo, "main", rollbackRecord(t, a, 2)))

	// A forged claim: the record is what rollback would write, the claim
	// edited (Validate passes every one of them, Git refutes them).
	forged := func(edit func(*Accepted)) *promotion.Record {
		f := a
		edit(&f)
		return rollbackRecord(t, f, 2)
	}
	side := h.g.git("commit-tree", "-p", h.cA, "-m", "not on main", h.cA+"^{tree}")
	// Each a refusal by rule prior-acceptance; what Git refutes is in each
	// message (the golden file).
	record := golden.ErrorLines(t, "testdata/check-prior.golden", 7, h.ids(side)...)
	for name, tc := range map[string]struct {
		rec  *promotion.Record
		want string
	}{
		"commit where the record is another attempt": {forged(func(f *Accepted) { f.Commit = h.cB }), "never reached ACCEPTED in that commit"},
		"commit outside the base's history":          {forged(func(f *Accepted) { f.Commit = side }), "not in the history of the base"},
		"other revision than accepted":               {forged(func(f *Accepted) { f.DesiredRevision = strings.Repeat("9", 40) }), "the acceptance was desired"},
		"other rendered hash":                        {forged(func(f *Accepted) { f.RenderedHash = "sha256:" + strings.Repeat("2", 64) }), "is not the accepted render"},
		"record ACCEPTED without evidence": {rollbackRecord(t, Accepted{Artifact: h.recB.Artifact, PromotionID: h.recB.PromotionID, Commit: h.cB,
			DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40), RenderedHash: h1, Evidence: promotion.PriorEvidencePath("production", "web", h.recB.PromotionID)}, 3), "which does not exist at"},
		"evidence with another digest": {rollbackRecord(t, Accepted{Artifact: h.recC.Artifact, PromotionID: h.recC.PromotionID, Commit: h.cC,
			DesiredRevision: strings.Repeat("3", 40), ObservedRevision: strings.Repeat("3", 40), RenderedHash: h1, Evidence: promotion.PriorEvidencePath("production", "web", h.recC.PromotionID)}, 2), "is for digest " + dD},
		"evidence only, the record never ACCEPTED": {rollbackRecord(t, Accepted{Artifact: promotion.Artifact{Image: "r.example/web@" + dD, Digest: dD, SourceCommit: strings.Repeat("5", 40)},
			PromotionID: strings.Replace(h.recC.PromotionID, "cccccccccccc", "dddddddddddd", 1), Commit: h.cD, DesiredRevision: strings.Repeat("4", 40), ObservedRevision: strings.Repeat("4", 40), RenderedHash: h1,
			Evidence: promotion.PriorEvidencePath("production", "web", strings.Replace(h.recC.PromotionID, "cccccccccccc", "dddddddddddd", 1))}, 2), "never reached ACCEPTED"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := CheckPrior(ctx, h.repo, "main", tc.rec)
			var re *exitcode.Refusal
			if !errors.As(err, &re) || re.Rule != RulePriorAcceptance {
				t.Fatalf("want a refusal (%s: %s), got %v", RulePriorAcceptance, tc.want, err)
			}
			record(name, err)
		})
	}
}

// Evidence rewritten after the acceptance (here to HALTED) no longer
// proves it: History reports it unproven, CheckPrior refuses a claim on it
// although the claimed commit itself is consistent.
func TestEvidenceChangedAfterAcceptance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHistory(t)
	l, err := History(ctx, h.repo, "main", "web", "production")
	must(t, err)
	a := l.Accepted[1] // A, proven
	claim := rollbackRecord(t, a, 2)
	must(t, CheckPrior(ctx, h.repo, "main", claim))
	h.g.commit("rewrite A's evidence", map[string][]byte{a.Evidence: evidenceOf(t, h.recA, promotion.Halted, dA)})

	l, err = History(ctx, h.repo, "main", "web", "production")
	must(t, err)
	if len(l.Accepted) != 1 || l.Accepted[0].Artifact.Digest != dB {
		t.Fatalf("accepted %+v, want only B", l.Accepted)
	}
	found := false
	for _, u := range l.Unproven {
		if u.PromotionID == h.recA.PromotionID && strings.Contains(u.Reason, "was changed after the acceptance") && strings.Contains(u.Reason, "HALTED") {
			found = true
		}
	}
	if !found {
		t.Fatalf("unproven %+v: want A changed after the acceptance", l.Unproven)
	}
	record := golden.ErrorLines(t, "testdata/evidence-changed-after-acceptance.golden", 2, h.ids()...)
	var re *exitcode.Refusal
	err = CheckPrior(ctx, h.repo, "main", claim)
	if !errors.As(err, &re) || re.Rule != RulePriorAcceptance {
		t.Fatalf("check of a claim on rewritten evidence: %v", err)
	}
	record("rewritten", err)
	// Deleted entirely.
	h.g.git("rm", "-q", a.Evidence)
	h.g.commit("delete A's evidence", nil)
	err = CheckPrior(ctx, h.repo, "main", claim)
	if !errors.As(err, &re) || re.Rule != RulePriorAcceptance {
		t.Fatalf("check of a claim on deleted evidence: %v", err)
	}
	record("deleted", err)
}

// An acceptance the notifier took on a later commit of the branch (the
// Acceptance declared the approved rendered hash) proves the digest like
// any other, and a rollback to it passes the PR gate: the claim repeats the
// observed revision the acceptance recorded, not the desired one.
func TestRollbackToAnAcceptanceOfALaterCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGitRepo(t)
	desired, later := g.desire("A"), g.desire("A, a later commit rendering the same objects")
	rec, err := promotion.NewCandidate("web", 1, promotion.Artifact{Image: "r.example/web@" + dA, Digest: dA, SourceCommit: strings.Repeat("5", 40)},
		promotion.Target{Environment: "production", Path: "apps/web/overlays/production", Cluster: "production", RenderedHash: h1, BaseRenderedHash: h1, Renderer: "v1"}, t0, "test")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("6", 40), ObservedRevision: strings.Repeat("6", 40), RenderedHash: h1, RuntimeEvidence: "evidence/staging/web/x.json"}, t0, "test"))
	must(t, rec.Approve("alice", rec.InputFor("v1"), t0.Add(time.Hour), t0))
	must(t, rec.Reconcile(desired, t0, "test"))
	must(t, rec.Accept(later, promotion.PriorEvidencePath("production", "web", rec.PromotionID), t0, "notifier"))
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: "web", Environment: "production", PromotionID: rec.PromotionID,
		Decision: promotion.Accepted, Reason: "observed a later commit that renders the approved objects", Image: rec.Artifact.Image, ArtifactDigest: dA,
		DesiredRevision: desired, ObservedRevision: later, RenderedHash: h1, DesiredRenderedHash: h1, ReportedBy: evidence.Reporter{Source: "flux"},
		Time: time.Now().UTC().Truncate(time.Second), Pods: runs(dA)}
	data, err := ev.Marshal()
	must(t, err)
	g.commit("A accepted on a later commit", files(t, rec, data))
	repo, err := gitops.OpenLocal(ctx, g.dir)
	must(t, err)
	l, err := History(ctx, repo, "main", "web", "production")
	must(t, err)
	if len(l.Accepted) != 1 || l.Accepted[0].ObservedRevision != later {
		t.Fatalf("accepted %+v (unproven %+v)", l.Accepted, l.Unproven)
	}
	must(t, CheckPrior(ctx, repo, "main", rollbackRecord(t, l.Accepted[0], 2)))
}

// TestHistoryListsUnusableVersions: a version of the record that does not
// parse, or names another app, is listed in Unproven with the reason and
// never counts as accepted; the proven acceptances around it still do.
func TestHistoryListsUnusableVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, bad := range map[string]func(t *testing.T) []byte{
		"does not parse": func(*testing.T) []byte { return []byte("schemaVersion: promotion/v1\nstate: ACCEPTED\nbogus: [\n") },
		"names another app": func(t *testing.T) []byte {
			data, err := acceptedRecord(t, 1, dC, strings.Repeat("3", 40)).Marshal()
			must(t, err)
			return []byte(strings.ReplaceAll(string(data), "web", "api"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newGitRepo(t)
			recA := acceptedRecord(t, 1, dA, g.desire("A"))
			g.commit("A accepted", files(t, recA, evidenceOf(t, recA, promotion.Accepted, dA)))
			bad := g.commit("a broken record", map[string][]byte{promotion.RecordPath("web", "production"): bad(t)})
			repo, err := gitops.OpenLocal(ctx, g.dir)
			must(t, err)
			l, err := History(ctx, repo, "main", "web", "production")
			must(t, err)
			if len(l.Accepted) != 1 || l.Accepted[0].Artifact.Digest != dA {
				t.Fatalf("accepted %+v, want only A", l.Accepted)
			}
			if len(l.Unproven) != 1 || l.Unproven[0].Commit != bad || !strings.Contains(l.Unproven[0].Reason, "never counts as accepted") ||
				!strings.Contains(l.Unproven[0].String(), promotion.RecordPath("web", "production")) {
				t.Fatalf("unproven %+v, want the broken version at %s", l.Unproven, bad)
			}
		})
	}
}
