package promotion

import (
	"fmt"
	"strings"
	"time"
)

// Revisions name what a controller reads. In a Git environment they are
// commit ids (40 or 64 lowercase hex: SHA-1 or SHA-256 repositories); in an
// OCI environment (the registry's source.oci) they are the manifest digest
// of the artifact CI pushed from the repository, sha256:<64 hex>, never a
// tag (a tag moves). The two forms never collide: a commit id has no
// algorithm prefix. Within one record every revision is of one kind, and an
// OCI record names in reconciling.desiredCommit the Git commit the desired
// artifact was built from (its org.opencontainers.image.revision).

// ValidOCIRevision reports whether rev is an OCI revision: sha256:<64
// lowercase hex>, a manifest digest.
func ValidOCIRevision(rev string) bool { return ValidDigest(rev) }

// ValidSourceRevision reports whether rev is a revision of either kind: a
// full commit id or an OCI manifest digest.
func ValidSourceRevision(rev string) bool { return ValidRevision(rev) || ValidOCIRevision(rev) }

// RevisionKind names the kind of a revision for messages: "an OCI
// artifact" or "a commit".
func RevisionKind(rev string) string {
	if ValidOCIRevision(rev) {
		return "an OCI artifact"
	}
	return "a commit"
}

// IsOCI reports whether the record's target reads an OCI artifact: its
// desired revision is a digest.
func (r *Record) IsOCI() bool {
	return r.Reconciling != nil && ValidOCIRevision(r.Reconciling.DesiredRevision)
}

// ReconcileOCI records RECONCILING for an OCI environment: digest is the
// manifest digest of the artifact that carries the merged commit's content,
// commit that merged commit, as the artifact's revision annotation names it
// (the caller read it from the registry).
func (r *Record) ReconcileOCI(digest, commit string, at time.Time, by string) error {
	fail := func(why string) error {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Reconciling, Reason: why}
	}
	switch {
	case !ValidOCIRevision(digest):
		return fail(fmt.Sprintf("desiredRevision %q is not an OCI manifest digest (sha256:<hex>)", digest))
	case !ValidRevision(commit):
		return fail(fmt.Sprintf("desiredCommit %q is not a full commit id", commit))
	}
	return r.advance(Reconciling, at, by, "", func() { r.Reconciling = &Reconciliation{DesiredRevision: digest, DesiredCommit: commit} })
}

// validateRevisions checks the revisions' kinds: every revision a commit id
// or an OCI digest; the observed revisions of the kind of their desired
// one; an OCI desired revision with the commit it was built from, and
// observed exactly (an artifact has no later commit of a branch: another
// digest is another artifact).
func (r *Record) validateRevisions(fail func(field, format string, args ...any) error) error {
	if v := r.VerifiedIn; v != nil && !v.IsCandidacy() && !v.IsAdoption() { // a candidacy or an adoption cites no revisions
		if err := checkPair(fail, "verifiedIn.desiredRevision", v.DesiredRevision, "verifiedIn.observedRevision", v.ObservedRevision); err != nil {
			return err
		}
	}
	c := r.Reconciling
	if c == nil {
		return nil
	}
	switch {
	case !ValidSourceRevision(c.DesiredRevision):
		return fail("reconciling.desiredRevision", "%q is neither a full commit id nor an OCI digest (sha256:<hex>)", c.DesiredRevision)
	case ValidOCIRevision(c.DesiredRevision) && !ValidRevision(c.DesiredCommit):
		return fail("reconciling.desiredCommit", "%q: an OCI desired revision names the full commit id its artifact was built from",
			c.DesiredCommit)
	case ValidRevision(c.DesiredRevision) && c.DesiredCommit != "":
		return fail("reconciling.desiredCommit", "%q: only an OCI desired revision names a commit (the desired revision is one)", c.DesiredCommit)
	}
	if r.Accepted == nil {
		return nil
	}
	return checkPair(fail, "reconciling.desiredRevision", c.DesiredRevision, "accepted.observedRevision", r.Accepted.ObservedRevision)
}

// checkPair checks a desired and an observed revision: both valid, of one
// kind, and equal when they are OCI digests.
func checkPair(fail func(field, format string, args ...any) error, df, desired, of, observed string) error {
	switch {
	case !ValidSourceRevision(desired):
		return fail(df, "%q is neither a full commit id nor an OCI digest (sha256:<hex>)", desired)
	case !ValidSourceRevision(observed):
		return fail(of, "%q is neither a full commit id nor an OCI digest (sha256:<hex>)", observed)
	case ValidOCIRevision(desired) != ValidOCIRevision(observed):
		return fail(of, "%q is %s, the desired %s is %s: one environment reads one kind of source", observed,
			RevisionKind(observed), desired, RevisionKind(desired))
	case ValidOCIRevision(desired) && observed != desired:
		return fail(of, "%s is not the desired OCI artifact %s: another digest is another artifact", observed, desired)
	}
	return nil
}

// RevisionCommit is the commit a source revision annotation names (an OCI
// artifact's org.opencontainers.image.revision, Flux's originRevision):
// "<ref>@sha1:<hex>", "<ref>@sha256:<hex>", "sha1:<hex>", "sha256:<hex>"
// or a bare full commit id; "" when it names none.
func RevisionCommit(rev string) string {
	if i := strings.LastIndex(rev, "@"); i >= 0 {
		rev = rev[i+1:]
	}
	switch {
	case strings.HasPrefix(rev, "sha1:"):
		if h := rev[len("sha1:"):]; len(h) == 40 && ValidRevision(h) {
			return h
		}
		return ""
	case strings.HasPrefix(rev, "sha256:"):
		if h := rev[len("sha256:"):]; len(h) == 64 && ValidRevision(h) {
			return h
		}
		return ""
	case ValidRevision(rev):
		return rev
	}
	return ""
}

// Commit is the desired Git commit: the desired revision, or for an OCI
// environment the commit the desired artifact was built from.
func (c *Reconciliation) Commit() string {
	if c.DesiredCommit != "" {
		return c.DesiredCommit
	}
	return c.DesiredRevision
}
