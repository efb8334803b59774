package promote

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// TestCandidacyVerified: CI's candidate in the first environment is
// VERIFIED by the evidence recorded at its candidacy (re-verified against
// dev's trust policy), approved, and passes the PR gate, which reads the
// same claim. No other environment ran the artifact before: without the
// candidacy kind, a first environment could never leave CANDIDATE.
func TestCandidacyVerified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := trusttest.New(t, true)
	f := newCandidateFixture(t, w, candidatePolicy(candidateTrust("72h")))
	img := w.Image("checkout")
	w.Attach(img, w.CIEvidence(img).All()...)
	p, err := f.candidate(w, ref(img), trusttest.SourceCommit)
	must(t, err)
	tr, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "dev", Now: w.Now, Trust: trust.Options{Now: w.Now}})
	must(t, err)
	if tr.Record.State != promotion.Verified || !tr.Record.VerifiedIn.IsCandidacy() || tr.Record.VerifiedIn.Environment != "dev" {
		t.Fatalf("candidacy verified as %s: %+v", tr.Record.State, tr.Record.VerifiedIn)
	}
	if msg := f.git("log", "-1", "--format=%B", p.Branch); !strings.Contains(msg, "VERIFIED by its candidacy in dev") ||
		!strings.Contains(msg, p.Record.Artifact.Evidence.Items[0].Digest) {
		t.Fatalf("commit message does not say what verified it:\n%s", msg)
	}
	_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "dev", Approver: "alice", Expires: w.Now.Add(2 * time.Hour), Now: w.Now,
		Renderer: renderer})
	must(t, err)
	rep, err := gate.CheckPromotion(ctx, f.repo, gate.Request{Base: "main", Head: p.Branch, Now: w.Now, Renderer: renderer, Trust: trust.Options{Now: w.Now}})
	must(t, err)
	if len(rep.Refusals) != 0 {
		t.Fatalf("the PR gate refuses the verified candidacy: %q %+v", rep.Refusals, rep.Findings)
	}
}

// TestCandidacyRefused attacks the candidacy kind: a record of a
// non-first environment that names itself as its candidacy (to skip the
// environment before it), and a candidacy whose recorded scan has grown
// too old for the environment by the time it is verified.
func TestCandidacyRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := trusttest.New(t, true)
	f := newCandidateFixture(t, w, candidatePolicy(candidateTrust("72h")))
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	p, err := f.candidate(w, ref(img), trusttest.SourceCommit)
	must(t, err)

	_, err = Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "dev", Now: w.Now.Add(100 * time.Hour),
		Trust: trust.Options{Now: w.Now.Add(100 * time.Hour)}})
	wantCandidateRefusal(t, err, trust.RuleScanTooOld, ref(img), e.Scan)

	// Staging is promoted into from dev: a hand-made staging record that
	// names itself as the candidacy is not verified by it.
	orig, err := p.Record.Marshal()
	must(t, err)
	rec, err := promotion.Parse("copy", orig)
	must(t, err)
	rec.Target.Environment, rec.Target.Path, rec.Target.Cluster = "staging", "apps/checkout/overlays/staging", "staging-eu-1"
	rec.PromotionID = promotion.AttemptKey{App: "checkout", Digest: rec.Artifact.Digest, Environment: "staging", Attempt: 1}.ID()
	rec.Artifact.Evidence.Candidacy, rec.Artifact.Evidence.Environment = rec.PromotionID, "staging"
	data, err := rec.Marshal()
	must(t, err)
	branch := fmt.Sprintf("throughline/promote/checkout/staging/%s-1", trusttest.Hex(img)[:12])
	f.git("checkout", "-q", "-b", branch, "main")
	f.write(map[string]string{promotion.RecordPath("checkout", "staging"): string(data)})
	f.commit("a staging record claiming its own candidacy")
	f.git("checkout", "-q", "main")
	_, err = Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "staging", Now: w.Now, Trust: trust.Options{Now: w.Now}})
	wantCandidateRefusal(t, err, gate.RuleCandidateNotFirst, ref(img), nil)
}

// TestProposeFollowsOrder: production is promoted into from staging only;
// a proposal from dev (skipping staging) is refused before anything is
// read or written.
func TestProposeFollowsOrder(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	f := newCandidateFixture(t, w, candidatePolicy(""))
	tip := f.git("rev-parse", "main")
	_, err := Propose(context.Background(), f.repo, ProposeRequest{App: "checkout", From: "dev", To: "production", Renderer: renderer})
	if re := refusedBy(t, err, environment.RuleOrder); re.File != promotion.PolicyFile || re.Field != "environments.production.promotesFrom" {
		t.Fatalf("dev -> production: %v, want a refusal of %s environments.production.promotesFrom", err, promotion.PolicyFile)
	}
	if branches := f.git("branch", "--list", "throughline/*"); branches != "" || f.git("rev-parse", "main") != tip {
		t.Fatalf("a refused proposal wrote: branches %q", branches)
	}
}

// TestCandidacySealed (issue 33, item 3): the candidacy's evidence is
// sealed by the candidate commit's message and the evidence manifest
// promote candidate pushed. A recorded bundle swapped for another valid
// bundle of the same image (a fresher scan, which verifies) is refused
// with evidence-differs naming that one bundle: edited in a later commit
// of the attempt branch, or in a rewritten candidate commit whose message
// matches it (the evidence manifest still tells), at promote verify and
// at the PR gate.
func TestCandidacySealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := promotion.RecordPath("checkout", "dev")
	type attempt struct {
		f       *fixture
		w       *trusttest.World
		p       *Proposal
		e       *trusttest.Evidence
		fresh   []byte
		swapped func()
	}
	newAttempt := func(t *testing.T) *attempt {
		w := trusttest.New(t, true)
		f := newCandidateFixture(t, w, candidatePolicy(candidateTrust("72h")))
		img := w.Image("checkout")
		e := w.CIEvidence(img)
		w.Attach(img, e.All()...)
		p, err := f.candidate(w, ref(img), trusttest.SourceCommit)
		must(t, err)
		fresh := w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-time.Minute), nil))
		w.Attach(img, fresh)
		a := &attempt{f: f, w: w, p: p, e: e, fresh: fresh}
		a.swapped = func() {
			rec, err := promotion.Parse(file, []byte(f.read(file)))
			must(t, err)
			for i, it := range rec.Artifact.Evidence.Items {
				if it.Digest == trusttest.DigestOf(e.Scan) {
					rec.Artifact.Evidence.Items[i].Digest = trusttest.DigestOf(fresh)
				}
			}
			data, err := rec.Marshal()
			must(t, err)
			f.write(map[string]string{file: string(data)})
		}
		return a
	}
	record := errorLines(t, "testdata/candidacy-sealed.golden", 2)
	verify := func(t *testing.T, a *attempt) error {
		hex := strings.TrimPrefix(a.p.Record.Artifact.Digest, "sha256:")
		_, err := Verify(ctx, a.f.repo, VerifyRequest{App: "checkout", To: "dev", Now: a.w.Now, Trust: trust.Options{Now: a.w.Now}})
		re := refusedBy(t, err, gate.RuleEvidenceDiffers)
		if re.File != file || re.Field != "evidence "+trusttest.DigestOf(a.fresh) {
			t.Fatalf("verify: %v, want a refusal of %s naming the swapped scan %s (its field), got %q", err, file,
				trusttest.DigestOf(a.fresh), re.Field)
		}
		return redacted(err, trusttest.DigestOf(a.fresh), "<the swapped scan>", trusttest.DigestOf(a.e.Scan), "<the sealed scan>",
			a.p.Record.Artifact.Evidence.Manifest, "<the evidence manifest>", hex, "<hex>", hex[:12], "<hex12>", a.w.Host, "<registry>")
	}
	t.Run("a scan swapped in a later commit", func(t *testing.T) {
		t.Parallel()
		a := newAttempt(t)
		a.f.amend(a.p.Branch, a.swapped)
		record("a scan swapped in a later commit", verify(t, a))
	})
	t.Run("the candidate commit rewritten", func(t *testing.T) {
		t.Parallel()
		a := newAttempt(t)
		msg := strings.ReplaceAll(a.f.git("log", "-1", "--format=%B", a.p.Branch), trusttest.DigestOf(a.e.Scan), trusttest.DigestOf(a.fresh))
		a.f.git("checkout", "-q", a.p.Branch)
		a.swapped()
		a.f.git("commit", "-q", "-a", "--amend", "-m", msg)
		a.f.git("checkout", "-q", "main")
		record("the candidate commit rewritten", verify(t, a))
	})
	t.Run("the PR gate", func(t *testing.T) {
		t.Parallel()
		a := newAttempt(t)
		_, err := Verify(ctx, a.f.repo, VerifyRequest{App: "checkout", To: "dev", Now: a.w.Now, Trust: trust.Options{Now: a.w.Now}})
		must(t, err)
		_, err = Approve(ctx, a.f.repo, ApproveRequest{App: "checkout", To: "dev", Approver: "alice", Expires: a.w.Now.Add(2 * time.Hour),
			Now: a.w.Now, Renderer: renderer})
		must(t, err)
		a.f.amend(a.p.Branch, a.swapped)
		rep, err := gate.CheckPromotion(ctx, a.f.repo, gate.Request{Base: "main", Head: a.p.Branch, Now: a.w.Now, Renderer: renderer,
			Trust: trust.Options{Now: a.w.Now}})
		must(t, err)
		for _, fd := range rep.Findings {
			if fd.Rule == gate.RuleEvidenceDiffers && fd.File == file && fd.Field == "evidence "+trusttest.DigestOf(a.fresh) {
				return
			}
		}
		t.Fatalf("the PR gate does not refuse the swapped scan with %s naming it: %+v", gate.RuleEvidenceDiffers, rep.Findings)
	})
}
