package promote

import (
	"context"
	"fmt"
	"time"

	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
)

// proposeTrust is the propose gate's step: the artifact of the source
// record (whose evidence the new record carries as is) re-verified
// against the target environment's trust policy.
func proposeTrust(ctx context.Context, r *gitops.Repo, base string, src *promotion.Record, to string, opts trust.Options) error {
	return gate.Reverify(ctx, r, base, src.Artifact, to, opts, time.Now())
}

// verifyTrust is the VERIFIED gate's step: the attempt's record must carry
// exactly its source record's evidence, re-verified against the target
// environment's trust policy.
func verifyTrust(ctx context.Context, r *gitops.Repo, base string, rec, src *promotion.Record, opts trust.Options, now time.Time) error {
	if err := gate.SameEvidence(rec, src); err != nil {
		return err
	}
	return gate.Reverify(ctx, r, base, rec.Artifact, rec.Target.Environment, opts, now)
}

// rollbackTrust is the rollback gate's step: the rollback target's own
// earlier record's evidence re-verified against TODAY's trust policy of
// env (at the base): an artifact today's policy no longer accepts is not
// a rollback target.
func rollbackTrust(ctx context.Context, r *gitops.Repo, base string, pick ledger.Accepted, env string, opts trust.Options) error {
	err := gate.Reverify(ctx, r, base, pick.Artifact, env, opts, time.Now())
	if err != nil {
		return fmt.Errorf("rollback target %s (%s, accepted at %s): today's trust policy of %s does not accept it: %w",
			gate.ArtifactRef(pick.Artifact), pick.PromotionID, gitrepo.Short(pick.Commit), env, err)
	}
	return nil
}
