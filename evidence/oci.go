package evidence

import (
	"fmt"

	"github.com/throughline-dev/throughline/promotion"
)

// validateRevisions checks the revisions' forms and kinds (promotion's
// rule, promotion/oci.go): the desired and observed revisions full commit
// ids, or both OCI manifest digests (sha256:<hex>); an OCI desired
// revision with the commit its artifact was built from (desiredCommit);
// observedCommit, the commit the observed artifact's revision annotation
// names as the controller reported it, only for OCI. An OCI artifact is
// ACCEPTED only when it is the desired one, built from the desired commit:
// another digest is another artifact, whatever it renders.
func (r *Record) validateRevisions() (field string, err error) {
	oci := promotion.ValidOCIRevision(r.DesiredRevision)
	switch {
	case !promotion.ValidSourceRevision(r.DesiredRevision):
		return "desiredRevision", fmt.Errorf("%q is neither a full commit id nor an OCI digest (sha256:<hex>)", r.DesiredRevision)
	case !promotion.ValidSourceRevision(r.ObservedRevision):
		return "observedRevision", fmt.Errorf("%q is neither a full commit id nor an OCI digest (sha256:<hex>)", r.ObservedRevision)
	case oci != promotion.ValidOCIRevision(r.ObservedRevision) && r.Decision == promotion.Accepted:
		return "observedRevision", fmt.Errorf("%q is %s, the desired %s %s: one environment reads one kind of source",
			r.ObservedRevision, promotion.RevisionKind(r.ObservedRevision), r.DesiredRevision, promotion.RevisionKind(r.DesiredRevision))
	case oci && !promotion.ValidRevision(r.DesiredCommit):
		return "desiredCommit", fmt.Errorf("%q: an OCI desired revision names the full commit id its artifact was built from", r.DesiredCommit)
	case !oci && r.DesiredCommit != "":
		return "desiredCommit", fmt.Errorf("%q: only an OCI desired revision names a commit", r.DesiredCommit)
	case !promotion.ValidOCIRevision(r.ObservedRevision) && r.ObservedCommit != "":
		return "observedCommit", fmt.Errorf("%q: only an OCI observed revision names the commit it was built from", r.ObservedCommit)
	case r.ObservedCommit != "" && !promotion.ValidRevision(r.ObservedCommit):
		return "observedCommit", fmt.Errorf("%q is not a full commit id", r.ObservedCommit)
	case oci && r.Decision == promotion.Accepted && r.ObservedRevision != r.DesiredRevision:
		return "observedRevision", fmt.Errorf("%s is not the desired OCI artifact %s: ACCEPTED only for the desired artifact", r.ObservedRevision,
			r.DesiredRevision)
	case oci && r.Decision == promotion.Accepted && r.ObservedCommit != "" && r.ObservedCommit != r.DesiredCommit:
		return "observedCommit", fmt.Errorf("%s: the observed artifact names another commit than the desired %s", r.ObservedCommit, r.DesiredCommit)
	}
	return "", nil
}

// checkOCIRevisions is CheckRevisions for OCI evidence: the observed
// artifact is the desired one ("" when it is).
func (r *Record) checkOCIRevisions() string {
	if r.ObservedRevision != r.DesiredRevision {
		return fmt.Sprintf("observedRevision %s is not the desired OCI artifact %s (built from %s): another digest is another artifact",
			r.ObservedRevision, r.DesiredRevision, r.DesiredCommit)
	}
	return ""
}

// ObservedTree is the Git commit whose content the controller applied: the
// observed revision, or in an OCI environment (where only the desired
// artifact is ever ACCEPTED) the commit the desired artifact was built from.
func (r *Record) ObservedTree() string {
	if promotion.ValidOCIRevision(r.ObservedRevision) && r.ObservedRevision == r.DesiredRevision && r.DesiredCommit != "" {
		return r.DesiredCommit
	}
	return r.ObservedRevision
}
