package promotion

import (
	"strings"
	"testing"
	"time"
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
	at := t0.Add(3 * time.Minute)
	ev := "evidence/production/checkout/x.json"
	ociStaging := VerifiedIn{Environment: "staging", DesiredRevision: ociA, ObservedRevision: ociA, RenderedHash: hashB,
		RuntimeEvidence: "evidence/staging/checkout/x.json"}
	tests := []struct {
		name string
		v    VerifiedIn // zero: evidence()
		step func(r *Record) error
		want string // "": accepted; else the refusal names it
	}{
		{"oci desired and observed", VerifiedIn{}, func(r *Record) error {
			must(t, r.ReconcileOCI(ociA, rev1, at, "ci"))
			return r.Accept(ociA, ev, at, "notifier")
		}, ""},
		{"oci verified in staging", ociStaging, func(*Record) error { return nil }, ""},
		{"sha256 git commit, later commit observed", VerifiedIn{}, func(r *Record) error {
			must(t, r.Reconcile(sha256Rev, at, "ci"))
			return r.Accept(sha256Rv2, ev, at, "notifier")
		}, ""},
		{"tag without digest", VerifiedIn{}, func(r *Record) error { return r.ReconcileOCI("production", rev1, at, "ci") }, "not an OCI manifest digest"},
		{"tag@digest is not a revision", VerifiedIn{}, func(r *Record) error { return r.ReconcileOCI("production@"+ociA, rev1, at, "ci") },
			"not an OCI manifest digest"},
		{"oci desired without its commit", VerifiedIn{}, func(r *Record) error { return r.ReconcileOCI(ociA, "", at, "ci") }, "desiredCommit"},
		{"oci revision observed for a git desired commit", VerifiedIn{}, func(r *Record) error {
			must(t, r.Reconcile(rev1, at, "ci"))
			return r.Accept(ociA, ev, at, "notifier")
		}, "accepted.observedRevision"},
		{"git sha-256 commit observed for an oci desired digest", VerifiedIn{}, func(r *Record) error {
			must(t, r.ReconcileOCI(ociA, rev1, at, "ci"))
			return r.Accept(strings.TrimPrefix(ociA, "sha256:"), ev, at, "notifier")
		}, "accepted.observedRevision"},
		{"digest of another artifact observed", VerifiedIn{}, func(r *Record) error {
			must(t, r.ReconcileOCI(ociA, rev1, at, "ci"))
			return r.Accept(ociB, ev, at, "notifier")
		}, "another digest is another artifact"},
		{"verified in staging with another artifact", VerifiedIn{}, func(r *Record) error {
			return r.Verify(VerifiedIn{Environment: "staging", DesiredRevision: ociA, ObservedRevision: ociB, RenderedHash: hashB, RuntimeEvidence: "e"}, at, "n")
		}, "verifiedIn.observedRevision"},
		{"verified in staging, kinds mixed", VerifiedIn{}, func(r *Record) error {
			return r.Verify(VerifiedIn{Environment: "staging", DesiredRevision: ociA, ObservedRevision: rev2, RenderedHash: hashB, RuntimeEvidence: "e"}, at, "n")
		}, "verifiedIn.observedRevision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
			err := tt.step(r)
			if tt.want == "" {
				must(t, err)
				data, err := r.Marshal()
				must(t, err)
				if _, err := Parse("promotion/checkout/production.yaml", data); err != nil {
					t.Fatalf("the record does not parse back: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a refusal naming %q", err, tt.want)
			}
		})
	}
}

func TestParseOCIRecordAttacks(t *testing.T) {
	r := approved(t, evidence())
	must(t, r.ReconcileOCI(ociA, rev1, t0.Add(3*time.Minute), "ci"))
	must(t, r.Accept(ociA, "evidence/production/checkout/x.json", t0.Add(4*time.Minute), "notifier"))
	data, err := r.Marshal()
	must(t, err)
	good := string(data)
	for _, tc := range []struct{ name, data, want string }{
		{"desiredCommit removed", strings.Replace(good, "  desiredCommit: "+rev1+"\n", "", 1), "reconciling.desiredCommit"},
		{"observed another artifact", strings.Replace(good, "observedRevision: "+ociA, "observedRevision: "+ociB, 1), "accepted.observedRevision"},
		{"observed a tag", strings.Replace(good, "observedRevision: "+ociA, "observedRevision: production", 1), "observedRevision"},
		{"observed tag@digest", strings.Replace(good, "observedRevision: "+ociA, "observedRevision: production@"+ociA, 1), "observedRevision"},
		{"desiredCommit on a git record", strings.Replace(strings.Replace(good, "observedRevision: "+ociA, "observedRevision: "+rev1, 1),
			"desiredRevision: "+ociA, "desiredRevision: "+rev1, 1), "reconciling.desiredCommit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.data == good {
				t.Fatal("the attack did not change the record")
			}
			_, err := Parse("promotion/checkout/production.yaml", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
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
