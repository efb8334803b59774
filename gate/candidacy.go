package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// CandidacyClaim checks a VERIFIED-by-candidacy claim: rec is the record
// where CI's artifact entered the chain (its evidence names its own
// attempt, in its own environment), in a first environment of the registry
// at the base. No environment ran the artifact before: the evidence
// recorded at candidacy, re-verified against the environment's trust
// policy (trustGate.reverify), is what verifies it. promote verify and the
// PR gate both check the claim.
func CandidacyClaim(ctx context.Context, r *gitops.Repo, base string, rec *promotion.Record) error {
	image := ArtifactRef(rec.Artifact)
	ev := rec.Artifact.Evidence
	if !rec.IsCandidacy() || ev.Environment != rec.Target.Environment {
		return &exitcode.Refusal{Rule: RuleEvidence, File: promotion.RecordPath(rec.App, rec.Target.Environment), Object: image,
			Field: "artifact.evidence.candidacy", Reason: fmt.Sprintf("%s in %s is not a candidacy (its evidence: %s): "+
				"only the record where promote candidate entered the artifact is verified by its own evidence", rec.PromotionID,
				rec.Target.Environment, DescribeEvidence(ev))}
	}
	reg, err := promotion.ReadRegistry(ctx, r, base)
	if err != nil {
		return err
	}
	return FirstEnvironment(reg, rec.Target.Environment, image)
}

// FirstEnvironment refuses an environment the registry does not know
// (environment-unknown) or that another environment promotes into
// (candidate-not-first), naming image.
func FirstEnvironment(reg *environment.Registry, name, image string) error {
	env, err := reg.Lookup(name)
	if err != nil {
		return AboutImage(err, image)
	}
	if env.First() {
		return nil
	}
	var first []string
	for _, n := range reg.Names() {
		if e, _ := reg.Get(n); e.First() {
			first = append(first, n)
		}
	}
	return &exitcode.Refusal{Rule: RuleCandidateNotFirst, File: reg.File(), Object: image,
		Field: "environments." + name + ".promotesFrom", Reason: RuleCandidateNotFirst,
		Err: fmt.Errorf("%s is promoted into from %s: a candidate from CI goes into a first environment (%s)",
			name, strings.Join(env.PromotesFrom, ", "), strings.Join(first, ", "))}
}

// RuleCandidateNotFirst refuses a candidacy in an environment promoted
// into from another (its promotesFrom lists one): its artifacts come from
// there, not from CI.
const RuleCandidateNotFirst = "candidate-not-first"

// AboutImage is err, a refusal that names no object, naming image and its
// rule.
func AboutImage(err error, image string) error {
	var re *exitcode.Refusal
	if !errors.As(err, &re) || re.Object != "" {
		return err
	}
	c := *re
	c.Object, c.Reason = image, re.Rule
	if re.Reason != "" {
		c.Err = errors.New(re.Reason)
		if re.Err != nil {
			c.Err = fmt.Errorf("%s: %w", re.Reason, re.Err)
		}
	}
	return &c
}
