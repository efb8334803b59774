package promote

import (
	"context"
	"fmt"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// verifyCandidacy moves a candidacy's record to VERIFIED (the claim, and
// its evidence the one sealed at candidacy, re-verified) and returns the commit message.
func verifyCandidacy(ctx context.Context, r *gitops.Repo, base, tip string, rec *promotion.Record, req VerifyRequest) (string, error) {
	if err := gate.CandidacyClaim(ctx, r, base, rec); err != nil {
		return "", err
	}
	if err := gate.SealedCandidacy(ctx, r, tip, rec, req.Trust); err != nil {
		return "", err
	}
	if err := gate.Reverify(ctx, r, base, rec.Artifact, rec.Target.Environment, req.Trust, req.Now); err != nil {
		return "", err
	}
	err := rec.VerifyByCandidacy(req.Now, "throughline promote verify")
	return fmt.Sprintf("promotion %s: VERIFIED by its candidacy in %s\n\nEvidence: %s\n", rec.PromotionID, rec.Target.Environment,
		gate.DescribeEvidence(rec.Artifact.Evidence)), exitcode.RefuseErr(RuleTransition, err)
}
