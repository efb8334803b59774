package gate

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// recordTarget refuses a record of env whose target disagrees with reg: an
// environment the registry does not know, a path that is another
// environment's or app's, another cluster, a source environment
// (verifiedIn) the registry does not know. The refusal's Field is the
// record's field.
func recordTarget(reg *environment.Registry, rec *promotion.Record, env string) error {
	if !reg.Configured() {
		return nil
	}
	t := rec.Target
	field := "target.environment"
	res, err := reg.Resolve(environment.Claim{App: rec.App, Environment: env, Path: t.Path, Cluster: t.Cluster})
	switch {
	case err != nil:
		var re *exitcode.Refusal
		if errors.As(err, &re) {
			field = targetField(re.Field)
		}
		return recordRefusal(rec, env, field, err)
	case t.Environment != env:
		return recordRefusal(rec, env, field, fmt.Errorf("target.environment %q is not %s", t.Environment, env))
	case t.Path != res.Path:
		return recordRefusal(rec, env, "target.path", fmt.Errorf("target.path %q is not the clean path %s", t.Path, res.Path))
	case t.Cluster == "":
		return recordRefusal(rec, env, "target.cluster", fmt.Errorf("target.cluster is empty, %s names %q", reg.File(), res.Cluster))
	}
	if v := rec.VerifiedIn; v != nil && !v.IsPriorAcceptance() && !v.IsCandidacy() {
		if _, err := reg.Lookup(v.Environment); err != nil {
			return recordRefusal(rec, env, "verifiedIn.environment", err)
		}
		if err := reg.CheckOrder(v.Environment, env); err != nil {
			return recordRefusal(rec, env, "verifiedIn.environment", err)
		}
	}
	return nil
}

// targetField is the record field a registry field is about.
func targetField(registryField string) string {
	switch path.Ext(registryField) {
	case ".cluster":
		return "target.cluster"
	case ".namespaces":
		return "target.environment"
	}
	if registryField == "environments" {
		return "target.environment"
	}
	return "target.path"
}

// recordRefusal is err (a registry refusal) said of rec's field, keeping
// the registry's rule.
func recordRefusal(rec *promotion.Record, env, field string, err error) error {
	rule := environment.RuleMismatch
	var re *exitcode.Refusal
	if errors.As(err, &re) {
		rule = re.Rule
	}
	return &exitcode.Refusal{Rule: rule, File: promotion.RecordPath(rec.App, env), Field: field,
		Reason: "the environment registry at the base refuses the record's target", Err: err}
}

// BaseRecordTarget returns the check of a record's target against the
// registry at the base branch's tip (for the transitions).
func BaseRecordTarget(ctx context.Context, r *gitops.Repo) (func(rec *promotion.Record, env string) error, error) {
	rev, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	reg, err := promotion.ReadRegistry(ctx, r, rev)
	if err != nil {
		return nil, err
	}
	return func(rec *promotion.Record, env string) error { return recordTarget(reg, rec, env) }, nil
}

// registry is the PR gate's environment step: the record's target (its
// environment, path and cluster) must agree with the registry at the base,
// whatever the PR does to the policy file.
func (c *promotionCheck) registry(ctx context.Context) error {
	reg, err := promotion.ReadRegistry(ctx, c.r, c.rep.Base)
	if err != nil {
		return err
	}
	err = recordTarget(reg, c.rec, c.rep.Environment)
	var re *exitcode.Refusal
	if errors.As(err, &re) {
		c.rep.refuse(Finding{Rule: re.Rule, File: c.recFile, Field: re.Field}, "%s", re.Error())
		return nil
	}
	return err
}
