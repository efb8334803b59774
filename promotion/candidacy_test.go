package promotion

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/golden"
)

// candidacyRecord is dev's CANDIDATE where CI's artifact entered the chain:
// its evidence names its own attempt.
func candidacyRecord(t *testing.T) *Record {
	t.Helper()
	tg := target()
	tg.Environment, tg.Path, tg.Cluster = "dev", "apps/checkout/overlays/dev", "dev-eu-1"
	art := Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + digest, Digest: digest, SourceCommit: rev1}
	art.Evidence = &SupplyChain{Environment: "dev", Items: []EvidenceItem{{Kind: "signature", Digest: hashA, Signer: "ci"}}}
	art.Evidence.Candidacy = AttemptKey{App: "checkout", Digest: digest, Environment: "dev", Attempt: 1}.ID()
	r, err := NewCandidate("checkout", 1, art, tg, t0, "ci")
	must(t, err)
	return r
}

// TestVerifyByCandidacy: the first environment's record is VERIFIED by the
// evidence recorded at its own candidacy, round trips, and moves on.
func TestVerifyByCandidacy(t *testing.T) {
	t.Parallel()
	r := candidacyRecord(t)
	must(t, r.VerifyByCandidacy(t0.Add(time.Minute), "throughline promote verify"))
	if !r.VerifiedIn.IsCandidacy() || r.VerifiedIn.Environment != "dev" {
		t.Fatalf("verifiedIn %+v", r.VerifiedIn)
	}
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(2*time.Minute)))
	data, err := r.Marshal()
	must(t, err)
	back, err := Parse("promotion/checkout/dev.yaml", data)
	must(t, err)
	if !back.VerifiedIn.IsCandidacy() || back.State != Approved {
		t.Fatalf("round trip: %+v", back)
	}
}

// TestCandidacyRefusals: candidacy verifies only the record where the
// artifact entered the chain, and cites no other environment's evidence.
func TestCandidacyRefusals(t *testing.T) {
	t.Parallel()
	record := golden.ErrorLines(t, "testdata/candidacy-refusals.golden", 5)
	err := candidate(t).VerifyByCandidacy(t0, "x")
	if te := (*TransitionError)(nil); !errors.As(err, &te) || te.From != Candidate || te.To != Verified {
		t.Fatalf("a record without evidence was verified by candidacy: %v", err)
	}
	record("no evidence", err)
	r := candidacyRecord(t)
	must(t, r.VerifyByCandidacy(t0.Add(time.Minute), "x"))
	good, err := r.Marshal()
	must(t, err)
	otherAttempt := AttemptKey{App: "checkout", Digest: digest, Environment: "staging", Attempt: 1}.ID()
	// field is the *RecordError's; "" for the schema's refusals, whose
	// message names the JSON pointer (in the golden file).
	for _, tc := range []struct{ name, from, to, field string }{
		{"evidence of another attempt", "candidacy: " + r.PromotionID, "candidacy: " + otherAttempt, "verifiedIn.kind"},
		{"cites runtime evidence", "  kind: candidacy\n", "  kind: candidacy\n  runtimeEvidence: evidence/dev/checkout/x.json\n", ""},
		{"another environment", "  kind: candidacy\n  environment: dev\n", "  kind: candidacy\n  environment: staging\n", "verifiedIn.environment"},
		{"unknown kind", "  kind: candidacy\n", "  kind: self\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := strings.Replace(string(good), tc.from, tc.to, 1)
			if data == string(good) {
				t.Fatalf("the test's edit %q did not apply to:\n%s", tc.from, good)
			}
			_, err := Parse("promotion/checkout/dev.yaml", []byte(data))
			var re *RecordError
			if !errors.As(err, &re) || re.File != "promotion/checkout/dev.yaml" || re.Field != tc.field {
				t.Fatalf("got %v, want a *RecordError of the file naming field %q", err, tc.field)
			}
			record(tc.name, err)
		})
	}
}
