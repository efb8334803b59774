package main

import (
	"context"
	"io"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
)

const promoteCheckLong = `Compare the pull request's head with its base. The change may touch only the
target overlay's image digest (its kustomization's images: entry) and the
target's promotion record, plus the kustomization keys the policy file
(throughline-policy.yaml: allowParameters) allows.

The target is rendered at both revisions and every difference is classified:
artifact (images), capacity (replicas, resources, HPA), routing (Ingress,
Gateway, HTTPRoute hosts), permission (ServiceAccount, Role/ClusterRole and
bindings), boundary (namespace, PVC, ResourceQuota, LimitRange, Secret and
ExternalSecret references), other. Boundary changes and objects that name
another environment are refused unless the policy allows them.

Also refused: no staging evidence for the digest (the record is not VERIFIED,
or the source environment's record is not ACCEPTED for it), the source
environment's desired revision not matching, a rollback whose prior
acceptance (verifiedIn of kind prior-acceptance) the base branch's history
does not back (the named commit is not in it, its record is not ACCEPTED for
that attempt and digest, or its evidence file is missing or disagrees), a
digest that is not the verified one, a tag (any unpinned image), a rendered
hash other than the approved one, an approval that is missing, expired or
bound to other inputs, a target that moved on, a moved tag (drift records
under drift/ and --drift-record), supply-chain evidence other than the source
record's (or, for a rollback, the prior acceptance's record's; rule
evidence-differs).

` + trustGateHelp + `

Exit codes: 0 pass; 3 refused (every reason listed); 4 a record, policy or
manifest is invalid.`

// promoteCheckOptions are the flags of promote check.
type promoteCheckOptions struct {
	repo, base, head, output string
	driftFiles               []string
	tg                       trustGateFlags
}

func (o *promoteCheckOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", ".", "the GitOps repository")
	f.StringVar(&o.base, "base", "", "the PR's base revision")
	f.StringVar(&o.head, "head", "", "the PR's head revision")
	f.StringArrayVar(&o.driftFiles, "drift-record", nil, "a drift record (throughline drift record) to check the artifact's tag against (repeatable)")
	outputFlag(f, &o.output, "output: text or json", "text", "json")
	o.tg.addFlags(f)
}

func newPromoteCheckCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteCheckOptions{}
	return leaf(&cobra.Command{
		Use:   "check --repo DIR --base REV --head REV",
		Short: "The PR job: refuse a promotion change that is more than the verified, approved digest",
		Long:  promoteCheckLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *promoteCheckOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.base == "" || o.head == "" {
		return exitcode.Usagef("--base and --head are required")
	}
	r, err := gitops.OpenLocal(ctx, o.repo)
	if err != nil {
		return err
	}
	r.Charts = chartSource()
	rep, err := gate.CheckPromotion(ctx, r, gate.Request{Base: o.base, Head: o.head, DriftFiles: o.driftFiles, Now: time.Now(),
		Renderer: buildVersion(), Trust: o.tg.options()})
	if err != nil {
		return err
	}
	logPromotionGate(g.log, rep)
	write := rep.WriteText
	if o.output == "json" {
		write = func(w io.Writer) error { return writeJSON(w, rep) }
	}
	if err := write(stdout); err != nil {
		return err
	}
	if !rep.OK && rep.Repository != nil { // no promotion record: the repository check judged the change
		return exitcode.Refuse(gate.RuleRepositoryCheck, "change refused: %d reason(s) (listed on stdout)", len(rep.Refusals))
	}
	if !rep.OK && rep.PromotionID == "" { // no one record (several, or a deleted one): the refusals say why
		return exitcode.Refuse(gate.RulePromotionCheck, "promotion change refused: %d reason(s) (listed on stdout)", len(rep.Refusals))
	}
	if !rep.OK {
		return exitcode.Refuse(gate.RulePromotionCheck, "promotion %s refused: %d reason(s) (listed on stdout)", rep.PromotionID, len(rep.Refusals))
	}
	return nil
}

// logPromotionGate logs the promotion gate's decision once, with the ids
// of its span and of the record.
func logPromotionGate(log zerolog.Logger, rep *gate.PromotionReport) {
	log.Info().Str("gate", "promotion").Bool("ok", rep.OK).Str("app", rep.App).Str("environment", rep.Environment).
		Str("promotionId", rep.PromotionID).Str("digest", rep.Digest).Strs("rules", gate.Rules(rep.Findings)).
		Int("refusals", len(rep.Refusals)).Str("traceId", rep.TraceID).Msg("gate decision")
}
