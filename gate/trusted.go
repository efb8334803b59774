package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/trust"
)

// RuleTrustUnpinned refuses an image by tag in an environment with a
// trust policy: the evidence is about a digest.
const RuleTrustUnpinned = "trust-unpinned"

// trusted verifies the images a change makes an environment with a trust
// policy run, whether or not a promotion record carries the change: every
// container image reference an overlay renders at head and did not at the
// base is verified against the environment's trust policy at the base, in
// the registry (trust.Verify, with the request's registry options), and a
// refusal is listed with its trust rule. A protected environment's change
// outside a promotion is refused by RuleProtected already, and the
// promotion's target is the promotion gate's (it re-verifies the record's
// evidence): neither is asked of the registry here.
func (c *repoCheck) trusted(ctx context.Context) error {
	for _, name := range c.reg.Names() {
		env, _ := c.reg.Get(name)
		if env.Trust == nil || env.Protected {
			continue
		}
		var pol *trust.Policy
		for _, k := range overlayKeys(c.base, c.head, name) {
			if c.promotes(k) {
				continue
			}
			added := newImages(c.base.overlays[k].objects(), c.head.overlays[k].objects())
			if len(added) > 0 && pol == nil {
				var err error
				if pol, err = (trustGate{r: c.r, base: c.rep.Base, opts: c.req.Trust}).policy(ctx, name); err != nil {
					return err
				}
			}
			for _, image := range added {
				if err := c.verifyImage(ctx, pol, name, k.path, image); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// verifyImage verifies image, which the overlay p of env runs at head,
// against pol and lists a refusal as a finding.
func (c *repoCheck) verifyImage(ctx context.Context, pol *trust.Policy, env, p, image string) error {
	f := Finding{Environment: env, File: p, Object: image, Field: "image", New: image}
	if _, err := policy.CheckImage(image); err != nil {
		f.Rule = RuleTrustUnpinned
		f.Reason = fmt.Sprintf("%s: %s runs %v: environment %s's trust policy verifies images by digest (pin it: throughline pin)",
			p, env, err, env)
		c.rep.refuse(f)
		return nil
	}
	_, err := trust.Verify(ctx, pol, image, c.req.Trust)
	var re *exitcode.Refusal
	if !errors.As(err, &re) {
		return err
	}
	f.Rule = re.Rule
	f.Reason = fmt.Sprintf("%s: the change makes %s run %s, which environment %s's trust policy refuses (%s at the base; "+
		"promote candidate records the evidence of CI's images): %v", p, env, image, env, c.reg.File(), err)
	c.rep.refuse(f)
	return nil
}

// newImages are the container images after runs that before did not,
// sorted.
func newImages(before, after []render.Object) []string {
	ran := map[string]bool{}
	var w render.ContainerWalker
	for _, o := range before {
		w.Each(o, o.ID(), func(ct render.Container) { ran[ct.Image] = true })
	}
	var out []string
	for _, o := range after {
		w.Each(o, o.ID(), func(ct render.Container) {
			if ct.Image != "" && !ran[ct.Image] {
				out = append(out, ct.Image)
			}
		})
	}
	slices.Sort(out)
	return slices.Compact(out)
}
