package promote

import (
	"context"
	"fmt"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// candidacyClaim checks a VERIFIED-by-candidacy claim: rec is the record
// where CI's artifact entered the chain (its evidence names its own
// attempt, in its own environment), in a first environment of the registry
// at the base. No environment ran the artifact before: the evidence
// recorded at candidacy, re-verified against the environment's trust
// policy (trustGate.reverify), is what verifies it. promote verify and the
// PR gate both check the claim.
func candidacyClaim(ctx context.Context, r *gitops.Repo, base string, rec *promotion.Record) error {
	image := artifactRef(rec.Artifact)
	ev := rec.Artifact.Evidence
	if !rec.IsCandidacy() || ev.Environment != rec.Target.Environment {
		return &exitcode.Refusal{Rule: RuleEvidence, File: promotion.RecordPath(rec.App, rec.Target.Environment), Object: image,
			Field: "artifact.evidence.candidacy", Reason: fmt.Sprintf("%s in %s is not a candidacy (its evidence: %s): "+
				"only the record where promote candidate entered the artifact is verified by its own evidence", rec.PromotionID,
				rec.Target.Environment, describeEvidence(ev))}
	}
	reg, err := promotion.ReadRegistry(ctx, r, base)
	if err != nil {
		return err
	}
	return firstEnvironment(reg, rec.Target.Environment, image)
}

// verifyCandidacy moves a candidacy's record to VERIFIED (the claim, and
// its evidence re-verified) and returns the commit message.
func verifyCandidacy(ctx context.Context, r *gitops.Repo, base string, rec *promotion.Record, req VerifyRequest) (string, error) {
	if err := candidacyClaim(ctx, r, base, rec); err != nil {
		return "", err
	}
	if err := (trustGate{r: r, base: base, opts: req.Trust}).reverify(ctx, rec.Artifact, rec.Target.Environment, req.Now); err != nil {
		return "", err
	}
	err := rec.VerifyByCandidacy(req.Now, "throughline promote verify")
	return fmt.Sprintf("promotion %s: VERIFIED by its candidacy in %s\n\nEvidence: %s\n", rec.PromotionID, rec.Target.Environment,
		describeEvidence(rec.Artifact.Evidence)), exitcode.RefuseErr(RuleTransition, err)
}
