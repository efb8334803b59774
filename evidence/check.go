package evidence

import (
	"context"
	"fmt"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/imageid"
	"github.com/throughline-dev/throughline/promotion"
)

// AppEnv is the app and environment the evidence belongs to (it lives at
// their path): gitops.ReadNamed refuses evidence naming others.
func (r *Record) AppEnv() (app, env string) { return r.App, r.Environment }

// Relation is how an observed revision stands to the desired one.
type Relation int

// The relations of Relate.
const (
	// Desired: the observed revision is the desired commit.
	Desired Relation = iota
	// Later: a later commit of the branch (the desired one is its ancestor).
	Later
	// Earlier: an ancestor of the desired commit (not caught up yet).
	Earlier
	// Unrelated: neither (another line of history, or a commit unknown here).
	Unrelated
)

// Ancestry answers whether commit a is an ancestor of (or equal to) b
// (gitrepo.Repo.IsAncestor).
type Ancestry func(ctx context.Context, a, b string) (bool, error)

// Relate is the notifier's rule for the revision a controller observed: the
// desired commit, a later commit of the branch (it counts only when it
// renders exactly the approved objects, which the caller checks), an
// earlier one (wait) or an unrelated one (halt). A git that fails is an
// error, never a relation.
func Relate(ctx context.Context, isAncestor Ancestry, desired, observed string) (Relation, error) {
	if observed == desired {
		return Desired, nil
	}
	if promotion.ValidOCIRevision(observed) || promotion.ValidOCIRevision(desired) {
		return Unrelated, nil // an artifact digest has no history: another one is another artifact
	}
	earlier, err := isAncestor(ctx, observed, desired)
	if err != nil {
		return Unrelated, err
	}
	if earlier {
		return Earlier, nil
	}
	later, err := isAncestor(ctx, desired, observed)
	if err != nil {
		return Unrelated, err
	}
	if later {
		return Later, nil
	}
	return Unrelated, nil
}

// CheckRevisions says why ACCEPTED evidence does not prove that its
// observed revision reconciled the desired one ("" when it does): the
// observed revision is the desired commit, or a later commit of the branch
// that renders the approved objects (Relate, and the renderedHash equal to
// the desiredRenderedHash that Validate already requires for it).
func (r *Record) CheckRevisions(ctx context.Context, isAncestor Ancestry) (string, error) {
	if promotion.ValidOCIRevision(r.DesiredRevision) || promotion.ValidOCIRevision(r.ObservedRevision) {
		return r.checkOCIRevisions(), nil
	}
	rel, err := Relate(ctx, isAncestor, r.DesiredRevision, r.ObservedRevision)
	if err != nil {
		return "", fmt.Errorf("evidence %s: relating observed %s to desired %s: %w", Path(r.Environment, r.App, r.PromotionID),
			r.ObservedRevision, r.DesiredRevision, err)
	}
	switch {
	case rel == Desired:
		return "", nil
	case rel != Later:
		return fmt.Sprintf("observedRevision %s is neither the desired commit %s nor a later commit of the branch", r.ObservedRevision,
			r.DesiredRevision), nil
	case r.RenderedHash == "" || r.RenderedHash != r.DesiredRenderedHash:
		return fmt.Sprintf("observedRevision %s, later than the desired %s, renders %q, not the approved %q", r.ObservedRevision,
			r.DesiredRevision, r.RenderedHash, r.DesiredRenderedHash), nil
	}
	return "", nil
}

// CheckPods says why the evidence's Pods do not prove that digest runs
// ("" when they do): at least one Pod runs a container declared with
// digest, and every such Pod's imageID matches it by the verifier's
// imageID match (imageid.Compare: the exact digest; an index child or
// config digest only as the verifier resolved it, outcome Verified).
func (r *Record) CheckPods(digest string) string {
	n := 0
	for _, p := range r.Pods {
		if p.Declared != digest {
			continue // another image of the app (a sidecar)
		}
		n++
		m := imageid.Compare(imageid.Input{Declared: digest, ImageID: p.ImageID})
		resolved := m.Outcome == v1alpha1.OutcomeUnverifiable && p.Outcome == string(v1alpha1.OutcomeVerified) &&
			p.Match != "" && p.Match != string(v1alpha1.MatchExact)
		if m.Outcome != v1alpha1.OutcomeVerified && !resolved {
			return fmt.Sprintf("Pod %s (%s container %s) runs imageID %s, not %s: %s", p.Pod, p.Workload, p.Container, p.ImageID, digest,
				orOutcome(m.Message, p.Outcome))
		}
	}
	if n == 0 {
		return fmt.Sprintf("no Pod runs a container declared with %s", digest)
	}
	return ""
}

func orOutcome(msg, outcome string) string {
	if msg != "" {
		return msg
	}
	return "outcome " + outcome
}

// Accepts says whether the evidence is an ACCEPTED decision for the
// promotion record rec (app, environment, attempt, digest and revisions),
// "" when it is.
func (r *Record) Accepts(rec *promotion.Record) string {
	switch {
	case r.Decision != promotion.Accepted:
		return fmt.Sprintf("it says %s, not ACCEPTED", r.Decision)
	case r.PromotionID != rec.PromotionID:
		return fmt.Sprintf("it is the evidence of %s, the record is %s", r.PromotionID, rec.PromotionID)
	case r.ArtifactDigest != rec.Artifact.Digest:
		return fmt.Sprintf("it is for digest %s, the record accepted %s", r.ArtifactDigest, rec.Artifact.Digest)
	case rec.Reconciling == nil || r.DesiredRevision != rec.Reconciling.DesiredRevision:
		return fmt.Sprintf("its desiredRevision %s is not the record's reconciling.desiredRevision", r.DesiredRevision)
	case rec.Accepted == nil || r.ObservedRevision != rec.Accepted.ObservedRevision:
		return fmt.Sprintf("its observedRevision %s is not the record's accepted.observedRevision", r.ObservedRevision)
	}
	return ""
}
