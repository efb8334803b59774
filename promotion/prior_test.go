package promotion

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/golden"
)

// rollbackCandidate is attempt 3 of digest in production, proposed by a
// rollback to the digest production accepted as attempt 1.
func rollbackCandidate(t *testing.T) *Record {
	t.Helper()
	r, err := NewCandidate("checkout", 3, Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + digest, Digest: digest, SourceCommit: rev1}, target(), t0, "throughline rollback")
	must(t, err)
	return r
}

func prior() PriorAcceptance {
	id := AttemptKey{App: "checkout", Digest: digest, Environment: "production", Attempt: 1}.ID()
	return PriorAcceptance{PromotionID: id, Evidence: PriorEvidencePath("production", "checkout", id), Commit: rev2}
}

func TestPriorAcceptanceVerifiesARollback(t *testing.T) {
	t.Parallel()
	r := rollbackCandidate(t)
	must(t, r.VerifyByPriorAcceptance(prior(), rev1, rev1, hashA, t0, "throughline rollback"))
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(time.Minute)))
	must(t, r.Reconcile(rev2, t0.Add(2*time.Minute), "ci"))
	must(t, r.Accept(rev2, PriorEvidencePath("production", "checkout", r.PromotionID), t0.Add(3*time.Minute), "notifier"))
	data, err := r.Marshal()
	must(t, err)
	for _, want := range []string{"kind: prior-acceptance", "priorAcceptance:", "promotionId: checkout-production-abababababab-1", "commit: " + rev2} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("marshalled record lacks %q:\n%s", want, data)
		}
	}
	back, err := Parse("promotion/checkout/production.yaml", data)
	must(t, err)
	if !back.VerifiedIn.IsPriorAcceptance() || *back.VerifiedIn.PriorAcceptance != prior() {
		t.Fatalf("verifiedIn after the round trip: %+v", back.VerifiedIn)
	}
}

// A record written before verification kinds existed has no kind and
// still parses, as kind environment.
func TestOldStyleRecordStillParses(t *testing.T) {
	t.Parallel()
	r := accepted(t)
	data, err := r.Marshal()
	must(t, err)
	if strings.Contains(string(data), "kind:") || strings.Contains(string(data), "priorAcceptance") {
		t.Fatalf("an environment verification writes no kind:\n%s", data)
	}
	back, err := Parse("promotion/checkout/production.yaml", data)
	must(t, err)
	if back.VerifiedIn.IsPriorAcceptance() || back.VerifiedIn.Kind != "" {
		t.Fatalf("old record read as %+v", back.VerifiedIn)
	}
	// An explicit kind environment is the same thing.
	explicit := strings.Replace(string(data), "verifiedIn:\n", "verifiedIn:\n  kind: environment\n", 1)
	if _, err := Parse("x.yaml", []byte(explicit)); err != nil {
		t.Fatalf("kind environment: %v", err)
	}
}

func TestPriorAcceptanceRefused(t *testing.T) {
	t.Parallel()
	otherDigest := AttemptKey{App: "checkout", Digest: digest2, Environment: "production", Attempt: 1}.ID()
	otherEnv := AttemptKey{App: "checkout", Digest: digest, Environment: "staging", Attempt: 1}.ID()
	later := AttemptKey{App: "checkout", Digest: digest, Environment: "production", Attempt: 3}.ID()
	record := golden.ErrorLines(t, "testdata/prior-acceptance-refused.golden", 8)
	for name, tc := range map[string]struct {
		edit  func(p *PriorAcceptance)
		field string
	}{
		"another digest's attempt": {func(p *PriorAcceptance) {
			p.PromotionID, p.Evidence = otherDigest, PriorEvidencePath("production", "checkout", otherDigest)
		}, "priorAcceptance.promotionId"},
		"another environment's": {func(p *PriorAcceptance) {
			p.PromotionID, p.Evidence = otherEnv, PriorEvidencePath("production", "checkout", otherEnv)
		}, "priorAcceptance.promotionId"},
		"not an earlier attempt": {func(p *PriorAcceptance) {
			p.PromotionID, p.Evidence = later, PriorEvidencePath("production", "checkout", later)
		}, "priorAcceptance.promotionId"},
		"evidence elsewhere":        {func(p *PriorAcceptance) { p.Evidence = "evidence/production/checkout/forged.json" }, "priorAcceptance.evidence"},
		"commit not a full id":      {func(p *PriorAcceptance) { p.Commit = "abc" }, "priorAcceptance.commit"},
		"attempt with leading zero": {func(p *PriorAcceptance) { p.PromotionID = strings.TrimSuffix(p.PromotionID, "1") + "01" }, "priorAcceptance.promotionId"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rollbackCandidate(t)
			p := prior()
			tc.edit(&p)
			err := r.VerifyByPriorAcceptance(p, rev1, rev1, hashA, t0, "x")
			var te *TransitionError
			if !errors.As(err, &te) || te.To != Verified || te.Record == nil || te.Record.Field != "verifiedIn."+tc.field {
				t.Fatalf("want a refusal naming verifiedIn.%s, got %v", tc.field, err)
			}
			record(name, err)
			if r.State != Candidate || r.VerifiedIn != nil {
				t.Fatalf("a refused verification changed the record: %s %+v", r.State, r.VerifiedIn)
			}
		})
	}
	// Kind environment from the target environment itself is still refused.
	r := rollbackCandidate(t)
	ev := evidence()
	ev.Environment = "production"
	err := r.Verify(ev, t0, "x")
	var te *TransitionError
	if !errors.As(err, &te) || te.Record == nil || te.Record.Field != "verifiedIn.environment" {
		t.Fatalf("same-environment evidence without kind prior-acceptance: %v", err)
	}
	record("same environment without kind prior-acceptance", err)
	// A prior acceptance naming another environment.
	r = rollbackCandidate(t)
	p := prior()
	err = r.Verify(VerifiedIn{Kind: KindPriorAcceptance, Environment: "staging", DesiredRevision: rev1, ObservedRevision: rev1, RenderedHash: hashA, RuntimeEvidence: p.Evidence, PriorAcceptance: &p}, t0, "x")
	if !errors.As(err, &te) || te.Record == nil || te.Record.Field != "verifiedIn.environment" {
		t.Fatalf("prior acceptance of another environment: %v", err)
	}
	record("prior acceptance of another environment", err)
}

// The schema and Validate agree on the shape: kind prior-acceptance needs
// priorAcceptance, any other kind must not carry one, unknown kinds and
// fields are refused.
func TestPriorAcceptanceSchema(t *testing.T) {
	t.Parallel()
	r := rollbackCandidate(t)
	must(t, r.VerifyByPriorAcceptance(prior(), rev1, rev1, hashA, t0, "throughline rollback"))
	data, err := r.Marshal()
	must(t, err)
	good := string(data)
	record := golden.ErrorLines(t, "testdata/prior-acceptance-schema.golden", 4)
	// The schema refuses each: a *RecordError of the file whose message
	// names the JSON pointer (in the golden file).
	for name, tc := range map[string]struct{ from, to string }{
		"no priorAcceptance": {"  priorAcceptance:\n", "  unused:\n"},
		"unknown kind":       {"kind: prior-acceptance", "kind: trust-me"},
		"environment kind with a prior acceptance": {"kind: prior-acceptance", "kind: environment"},
		"unknown field": {"    commit: ", "    signedBy: x\n    commit: "},
	} {
		bad := strings.Replace(good, tc.from, tc.to, 1)
		if bad == good {
			t.Fatalf("%s: edit did not apply to\n%s", name, good)
		}
		_, err := Parse("promotion/checkout/production.yaml", []byte(bad))
		var re *RecordError
		if !errors.As(err, &re) || re.File != "promotion/checkout/production.yaml" {
			t.Errorf("%s: want a record error of the file, got %v", name, err)
		}
		record(name, err)
	}
}
