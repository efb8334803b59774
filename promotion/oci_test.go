package promotion

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/golden"
)

var (
	ociA      = "sha256:" + strings.Repeat("e1", 32)
	ociB      = "sha256:" + strings.Repeat("f2", 32)
	sha256Rev = strings.Repeat("c", 64) // a commit of a SHA-256 Git repository
	sha256Rv2 = strings.Repeat("d", 64)
)

// approved is a record APPROVED for production, verified in staging with
// the given revisions.
func approved(t *testing.T, v VerifiedIn) *Record {
	t.Helper()
	r := candidate(t)
	must(t, r.Verify(v, t0.Add(time.Minute), "notifier"))
	must(t, r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(2*time.Minute)))
	return r
}

func TestOCIRevisions(t *testing.T) {
	t.Parallel()
	at := t0.Add(3 * time.Minute)
	ev := "evidence/production/checkout/x.json"
	ociStaging := VerifiedIn{Environment: "staging", DesiredRevision: ociA, ObservedRevision: ociA, RenderedHash: hashB,
		RuntimeEvidence: "evidence/staging/checkout/x.json"}
	tests := []struct {
		name  string
		v     VerifiedIn // zero: evidence()
		step  func(t *testing.T, r *Record) error
		to    State  // "": accepted; else the transition refused
		field string // the *RecordError's field, when the record it would make was refused
	}{
		{"oci desired and observed", VerifiedIn{}, func(t *testing.T, r *Record) error {
			must(t, r.ReconcileOCI(ociA, rev1, at, "ci"))
			return r.Accept(ociA, ev, at, "notifier")
		}, "", ""},
		{"oci verified in staging", ociStaging, func(*testing.T, *Record) error { return nil }, "", ""},
		{"sha256 git commit, later commit observed", VerifiedIn{}, func(t *testing.T, r *Record) error {
			must(t, r.Reconcile(sha256Rev, at, "ci"))
			return r.Accept(sha256Rv2, ev, at, "notifier")
		}, "", ""},
		{"tag without digest", VerifiedIn{}, func(t *testing.T, r *Record) error { return r.ReconcileOCI("production", rev1, at, "ci") }, Reconciling, ""},
		{"tag@digest is not a revision", VerifiedIn{}, func(t *testing.T, r *Record) error { return r.ReconcileOCI("production@"+ociA, rev1, at, "ci") },
			Reconciling, ""},
		{"oci desired without its commit", VerifiedIn{}, func(t *testing.T, r *Record) error { return r.ReconcileOCI(ociA, "", at, "ci") }, Reconciling, ""},
		{"oci revision observed for a git desired commit", VerifiedIn{}, func(t *testing.T, r *Record) error {
			must(t, r.Reconcile(rev1, at, "ci"))
			return r.Accept(ociA, ev, at, "notifier")
		}, Accepted, "accepted.observedRevision"},
		{"git sha-256 commit observed for an oci desired digest", VerifiedIn{}, func(t *testing.T, r *Record) error {
			must(t, r.ReconcileOCI(ociA, rev1, at, "ci"))
			return r.Accept(strings.TrimPrefix(ociA, "sha256:"), ev, at, "notifier")
		}, Accepted, "accepted.observedRevision"},
		{"digest of another artifact observed", VerifiedIn{}, func(t *testing.T, r *Record) error {
			must(t, r.ReconcileOCI(ociA, rev1, at, "ci"))
			return r.Accept(ociB, ev, at, "notifier")
		}, Accepted, "accepted.observedRevision"},
		{"verified in staging with another artifact", VerifiedIn{}, func(t *testing.T, r *Record) error {
			return r.Verify(VerifiedIn{Environment: "staging", DesiredRevision: ociA, ObservedRevision: ociB, RenderedHash: hashB, RuntimeEvidence: "e"}, at, "n")
		}, Verified, "verifiedIn.observedRevision"},
		{"verified in staging, kinds mixed", VerifiedIn{}, func(t *testing.T, r *Record) error {
			return r.Verify(VerifiedIn{Environment: "staging", DesiredRevision: ociA, ObservedRevision: rev2, RenderedHash: hashB, RuntimeEvidence: "e"}, at, "n")
		}, Verified, "verifiedIn.observedRevision"},
	}
	record := golden.ErrorLines(t, "testdata/oci-revisions.golden", 8)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := tt.v
			if v.Environment == "" {
				v = evidence()
			}
			var r *Record
			if strings.HasPrefix(tt.name, "verified in staging with") || strings.HasPrefix(tt.name, "verified in staging, kinds") {
				r = candidate(t)
			} else {
				r = approved(t, v)
			}
			err := tt.step(t, r)
			if tt.to == "" {
				must(t, err)
				data, err := r.Marshal()
				must(t, err)
				if _, err := Parse("promotion/checkout/production.yaml", data); err != nil {
					t.Fatalf("the record does not parse back: %v", err)
				}
				return
			}
			var te *TransitionError
			if !errors.As(err, &te) || te.To != tt.to {
				t.Fatalf("got %v, want the transition to %s refused", err, tt.to)
			}
			if re := te.Record; re != nil && (re.Field != tt.field || re.File != "promotion/checkout/production.yaml") || re == nil && tt.field != "" {
				t.Fatalf("got %v, want a refusal of the record's field %q", err, tt.field)
			}
			record(tt.name, err)
		})
	}
}

func TestParseOCIRecordAttacks(t *testing.T) {
	t.Parallel()
	r := approved(t, evidence())
	must(t, r.ReconcileOCI(ociA, rev1, t0.Add(3*time.Minute), "ci"))
	must(t, r.Accept(ociA, "evidence/production/checkout/x.json", t0.Add(4*time.Minute), "notifier"))
	data, err := r.Marshal()
	must(t, err)
	good := string(data)
	record := golden.ErrorLines(t, "testdata/oci-record-attacks.golden", 5)
	// field is the *RecordError's; "" for the schema's refusals, whose
	// message names the JSON pointer (in the golden file).
	for _, tc := range []struct{ name, data, field string }{
		{"desiredCommit removed", strings.Replace(good, "  desiredCommit: "+rev1+"\n", "", 1), "reconciling.desiredCommit"},
		{"observed another artifact", strings.Replace(good, "observedRevision: "+ociA, "observedRevision: "+ociB, 1), "accepted.observedRevision"},
		{"observed a tag", strings.Replace(good, "observedRevision: "+ociA, "observedRevision: production", 1), ""},
		{"observed tag@digest", strings.Replace(good, "observedRevision: "+ociA, "observedRevision: production@"+ociA, 1), ""},
		{"desiredCommit on a git record", strings.Replace(strings.Replace(good, "observedRevision: "+ociA, "observedRevision: "+rev1, 1),
			"desiredRevision: "+ociA, "desiredRevision: "+rev1, 1), "reconciling.desiredCommit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.data == good {
				t.Fatal("the attack did not change the record")
			}
			_, err := Parse("promotion/checkout/production.yaml", []byte(tc.data))
			var re *RecordError
			if !errors.As(err, &re) || re.File != "promotion/checkout/production.yaml" || re.Field != tc.field {
				t.Fatalf("got %v, want a *RecordError of the file naming field %q", err, tc.field)
			}
			record(tc.name, err)
		})
	}
}

// FuzzRevisionCommit: a revision annotation comes from a registry (any
// string): RevisionCommit never panics and returns "" or a full commit id.
func FuzzRevisionCommit(f *testing.F) {
	for _, s := range []string{"main@sha1:" + rev1, "main@sha256:" + sha256Rev, "sha1:" + rev1, rev1, "v1.2.0", "@", "a@b@sha1:" + rev1, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c := RevisionCommit(s); c != "" && !ValidRevision(c) {
			t.Fatalf("RevisionCommit(%q) = %q", s, c)
		}
	})
}
