package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
)

// Rules of the supply-chain gates (besides package trust's own rules, which
// name what the re-verification of the recorded evidence refused).
const (
	// RuleEvidenceUnrecorded: the target's trust policy requires evidence
	// and the record carries none.
	RuleEvidenceUnrecorded = "evidence-unrecorded"
	// RuleEvidenceDiffers: the record's evidence is not the one its source
	// record carries (recorded once at candidacy, never copied from
	// elsewhere, rebuilt or re-discovered).
	RuleEvidenceDiffers = "evidence-differs"
)

// trustGate re-verifies an artifact's recorded supply-chain evidence
// against one environment's trust policy, read at the base revision.
type trustGate struct {
	r    *gitops.Repo
	base string
	// opts are the caller's registry options and cache directory.
	opts trust.Options
}

// policy compiles env's trust policy from the registry at the base
// revision (its key and trusted root files read there too). An empty
// registry requires nothing, nor does an environment it does not list
// (every gate refuses that one by its registry step).
func (g trustGate) policy(ctx context.Context, env string) (*trust.Policy, error) {
	reg, err := promotion.ReadRegistry(ctx, g.r, g.base)
	if err != nil {
		return nil, err
	}
	if _, known := reg.Get(env); !known {
		return &trust.Policy{Environment: env}, nil
	}
	read := func(ctx context.Context, p string) ([]byte, error) { return g.r.ReadFile(ctx, g.base, p) }
	return trust.ForEnvironment(ctx, reg, env, read)
}

// ArtifactRef is the digest reference of art (repository@sha256:<hex>,
// without its tag): what the evidence is about.
func ArtifactRef(art promotion.Artifact) string {
	name, _ := overlay.SplitImage(art.Image)
	return name + "@" + art.Digest
}

// reverify re-verifies the evidence recorded in art (its bundle digests,
// fetched by digest: never a newer bundle found by tag) against env's
// trust policy at the base, with art's source commit as the provenance's
// required source. A policy that requires evidence and an artifact that
// records none is refused (rule evidence-unrecorded); the trust package's
// refusals name their rule, the image and the evidence digest.
func (g trustGate) reverify(ctx context.Context, art promotion.Artifact, env string, now time.Time) error {
	pol, err := g.policy(ctx, env)
	if err != nil || !pol.Requires() {
		return err
	}
	image := ArtifactRef(art)
	if art.Evidence == nil || len(art.Evidence.Items) == 0 {
		return &exitcode.Refusal{Rule: RuleEvidenceUnrecorded, Object: image, Field: "artifact.evidence",
			Reason: fmt.Sprintf("%s: the trust policy of %s requires supply-chain evidence and the record carries none "+
				"(evidence is recorded at candidacy: throughline promote candidate)", RuleEvidenceUnrecorded, env)}
	}
	opts := g.opts
	opts.SourceCommit, opts.Now = art.SourceCommit, now
	// The evidence manifest sealed at candidacy holds every recorded
	// bundle: one request instead of one per bundle. It decides nothing:
	// a bundle counts only when its bytes hash to a recorded digest.
	opts.Manifest = art.Evidence.Manifest
	if _, err := trust.VerifyRecorded(ctx, pol, image, art.Evidence.Digests(), opts); err != nil {
		return fmt.Errorf("re-verifying the evidence recorded at candidacy %s against the trust policy of %s: %w",
			art.Evidence.Candidacy, env, err)
	}
	return nil
}

// SameEvidence refuses a record whose evidence is not exactly its source
// record's (src: the record it was promoted from, or rolled back to),
// naming only what differs.
func SameEvidence(rec, src *promotion.Record) error {
	a, b := rec.Artifact.Evidence, src.Artifact.Evidence
	if a == nil && b == nil || a != nil && b != nil && a.Equal(b) {
		return nil
	}
	change, changed := evidenceChange(b, a)
	field := "artifact.evidence"
	if len(changed) == 1 {
		field = "evidence " + changed[0]
	}
	return &exitcode.Refusal{Rule: RuleEvidenceDiffers, File: promotion.RecordPath(rec.App, rec.Target.Environment),
		Object: ArtifactRef(rec.Artifact), Field: field,
		Reason: fmt.Sprintf("%s: the evidence of %s is not its source's, %s (%s): %s; the evidence is recorded once at candidacy "+
			"and every later record references exactly it", RuleEvidenceDiffers, rec.PromotionID, src.PromotionID,
			promotion.RecordPath(src.App, src.Target.Environment), change)}
}

// evidenceChange says what differs in got from want: only the bundles,
// candidacy, environment or manifest that changed; changed are the
// digests of the bundles that changed (those got brings in, else those it
// drops).
func evidenceChange(want, got *promotion.SupplyChain) (string, []string) {
	switch {
	case got == nil:
		return "it carries none, its source " + DescribeEvidence(want), nil
	case want == nil:
		return "it carries " + DescribeEvidence(got) + ", its source none", nil
	}
	var out, changed []string
	if !slices.Equal(got.Items, want.Items) {
		var change string
		change, changed = itemChanges(want.Items, got.Items)
		out = append(out, change)
	}
	for _, f := range []struct{ name, want, got string }{
		{"candidacy", want.Candidacy, got.Candidacy},
		{"environment", want.Environment, got.Environment},
		{"manifest", want.Manifest, got.Manifest},
	} {
		if f.want != f.got {
			out = append(out, fmt.Sprintf("%s %q, not %q", f.name, f.got, f.want))
		}
	}
	return strings.Join(out, "; "), changed
}

// DescribeEvidence names a record's supply-chain evidence in a sentence
// (its bundles' digests, or none).
func DescribeEvidence(s *promotion.SupplyChain) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%v (candidacy %s in %s)", s.Digests(), s.Candidacy, s.Environment)
}

// supplyChain is the PR gate's step: the record must carry exactly the evidence
// of the record it was promoted from (the source environment's at the
// base, or for a rollback the prior acceptance's own record), re-verified
// against the target environment's trust policy at the base. What is
// refused is a finding naming the rule, the image and the evidence digest.
func (c *promotionCheck) supplyChain(ctx context.Context) error {
	g := trustGate{r: c.r, base: c.rep.Base, opts: c.req.Trust}
	src, err := c.trustSource(ctx)
	if err != nil {
		return err
	}
	if src != nil {
		if err := c.trustFinding(SameEvidence(c.rec, src)); err != nil {
			return err
		}
	}
	return c.trustFinding(g.reverify(ctx, c.rec.Artifact, c.rep.Environment, c.req.Now))
}

// trustSource is the record c.rec's evidence must be the same as (nil:
// none to compare with, a candidacy; an unbacked claim is the evidence
// step's finding).
func (c *promotionCheck) trustSource(ctx context.Context) (*promotion.Record, error) {
	v, rec := c.rec.VerifiedIn, c.rec
	switch {
	case v == nil || v.IsCandidacy():
		return nil, nil
	case v.IsPriorAcceptance():
		p := v.PriorAcceptance
		if in, err := c.r.IsAncestor(ctx, p.Commit, c.rep.Base); err != nil || !in {
			return nil, err // not in the base's history: the evidence step refuses it (prior-acceptance)
		}
		prev, err := promotion.ReadRecord(ctx, c.r, p.Commit, rec.App, rec.Target.Environment)
		if err != nil || prev == nil || prev.PromotionID != p.PromotionID {
			return nil, err // not the prior acceptance: the evidence step refuses it
		}
		return prev, nil
	}
	src, err := promotion.ReadRecord(ctx, c.r, c.rep.Base, rec.App, v.Environment)
	if err != nil || src == nil || src.Artifact.Digest != rec.Artifact.Digest {
		return nil, err // the source does not back the digest: the evidence step refuses it
	}
	return src, nil
}

// trustFinding lists a refusal of the supply-chain gate as a finding,
// each of several (package trust refuses every bad bundle: errors.Join)
// as its own; any other error is returned.
func (c *promotionCheck) trustFinding(err error) error {
	var re *exitcode.Refusal
	if !errors.As(err, &re) {
		return err
	}
	rs := exitcode.Refusals(err)
	for _, r := range rs {
		file := r.File
		if file == "" {
			file = c.recFile
		}
		msg := err.Error()
		if len(rs) > 1 {
			msg = r.Error()
		}
		c.rep.refuse(Finding{Rule: r.Rule, File: file, Object: r.Object, Field: r.Field}, "%s", msg)
	}
	return nil
}

// Reverify re-verifies art's recorded supply-chain evidence against env's
// trust policy at base (its keys and trusted roots read there too), at
// now: the step the PR gate, propose, verify and rollback share.
func Reverify(ctx context.Context, r *gitops.Repo, base string, art promotion.Artifact, env string, opts trust.Options, now time.Time) error {
	return trustGate{r: r, base: base, opts: opts}.reverify(ctx, art, env, now)
}
