package evidence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

var (
	ociA   = "sha256:" + strings.Repeat("e1", 32)
	ociB   = "sha256:" + strings.Repeat("f2", 32)
	commit = strings.Repeat("a", 40)
)

// ociRecord is ACCEPTED evidence of an OCI environment.
func ociRecord() *Record {
	r := record()
	r.DesiredRevision, r.ObservedRevision, r.DesiredCommit, r.ObservedCommit = ociA, ociA, commit, commit
	return r
}

// TestOCIEvidence: evidence/v1 takes sha256:<digest> revisions in an OCI
// environment, and refuses what would let another artifact or a Git
// revision pass for the desired artifact.
func TestOCIEvidence(t *testing.T) {
	t.Parallel()
	sha256Commit := strings.Repeat("c", 64)
	record := golden.ErrorLines(t, "testdata/oci-evidence.golden", 10)
	for _, tc := range []struct {
		name  string
		edit  func(r *Record)
		field string // "": valid
	}{
		{"oci accepted", func(*Record) {}, ""},
		{"oci accepted, no origin reported", func(r *Record) { r.ObservedCommit = "" }, ""},
		{"git sha-256 commits", func(r *Record) {
			r.DesiredRevision, r.ObservedRevision, r.DesiredCommit, r.ObservedCommit = sha256Commit, sha256Commit, "", ""
		}, ""},
		{"oci halted on another artifact", func(r *Record) {
			r.ObservedRevision, r.Decision, r.Reason = ociB, promotion.Halted, "wrong artifact"
		}, ""},
		{"digest of another artifact accepted", func(r *Record) { r.ObservedRevision = ociB }, "observedRevision"},
		{"another artifact accepted with a later-commit reason", func(r *Record) {
			hash := "sha256:" + strings.Repeat("1", 64)
			r.ObservedRevision, r.RenderedHash, r.DesiredRenderedHash, r.Reason = ociB, hash, hash, "later, renders the approved objects"
		}, "observedRevision"},
		{"artifact built from another commit accepted", func(r *Record) { r.ObservedCommit = strings.Repeat("b", 40) }, "observedCommit"},
		{"tag without digest", func(r *Record) { r.ObservedRevision = "production" }, "observedRevision"},
		{"tag@digest", func(r *Record) { r.ObservedRevision = "production@" + ociA }, "observedRevision"},
		{"oci revision for a git environment", func(r *Record) { r.DesiredRevision, r.DesiredCommit, r.ObservedCommit = commit, "", "" },
			"observedRevision"},
		{"git sha-256 commit mistaken for the oci digest", func(r *Record) { r.ObservedRevision = strings.TrimPrefix(ociA, "sha256:") },
			"observedRevision"},
		{"oci desired without its commit", func(r *Record) { r.DesiredCommit = "" }, "desiredCommit"},
		{"git desired with a commit", func(r *Record) {
			r.DesiredRevision, r.ObservedRevision, r.ObservedCommit = commit, commit, ""
		}, "desiredCommit"},
		{"git observed with an origin commit", func(r *Record) {
			r.DesiredRevision, r.ObservedRevision, r.DesiredCommit = commit, commit, ""
		}, "observedCommit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ociRecord()
			tc.edit(r)
			data, err := r.Marshal()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Parse("x.json", data); err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("got %v, want a refusal naming %s", err, tc.field)
			}
			record(tc.name, err)
		})
	}
}

// TestOCICheckRevisions: promote verify's rule on OCI evidence is equality;
// git is never asked about a digest.
func TestOCICheckRevisions(t *testing.T) {
	t.Parallel()
	noGit := func(context.Context, string, string) (bool, error) {
		return false, errors.New("git asked about an OCI digest")
	}
	r := ociRecord()
	if why, err := r.CheckRevisions(context.Background(), noGit); why != "" || err != nil {
		t.Fatalf("the desired artifact: %q %v", why, err)
	}
	r.ObservedRevision = ociB
	if why, err := r.CheckRevisions(context.Background(), noGit); err != nil || !strings.Contains(why, "not the desired OCI artifact") {
		t.Fatalf("another artifact: %q %v", why, err)
	}
	if rel, err := Relate(context.Background(), noGit, ociA, ociB); rel != Unrelated || err != nil {
		t.Fatalf("Relate(another artifact) = %v %v, want Unrelated", rel, err)
	}
	if rel, err := Relate(context.Background(), noGit, commit, ociA); rel != Unrelated || err != nil {
		t.Fatalf("Relate(an artifact for a commit) = %v %v, want Unrelated", rel, err)
	}
}
