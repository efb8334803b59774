package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
)

const checkLong = `The check every pull request of the GitOps repository can be required to
pass, promotion or not.

The environment registry is read from throughline-policy.yaml at --base (never
at --head: a change does not edit the rules that judge it). Every overlay of
every registered environment (its paths patterns and explicit apps, matched
against the overlays that exist at base and at head) is rendered at both
revisions and every difference is listed per environment with its class
(artifact, capacity, routing, permission, boundary, other; see promote check).

Refused (exit 3, every reason listed):
  - a protected environment's render that changes outside a promotion record
    (a change that carries exactly one record, promotion/<app>/<env>.yaml, is a
    promotion: its target is judged by promote check, which runs here too);
  - one object (group, kind, namespace, name) rendered on one cluster by two
    apps or two overlay paths;
  - a controller object (an Argo CD Application or ApplicationSet, a Flux
    Kustomization) in a file under clusters/ or matched by an environment's
    controllers patterns that is not bound to an overlay path and destination
    namespace of the one environment that owns the file (a staging Application
    pointing at production's path, a path that is no registered overlay, an
    ApplicationSet generating such an Application or whose Applications
    cannot be known before they exist, another repository, revision, cluster, project or service
    account than the environment's binding), a second controller of one overlay
    and cluster, or an AppProject wider than its environment's registry entry;
  - an Argo CD multi-source Application two of whose sources render the same
    object;
  - a change to what judges or deploys a protected environment (its registry
    entry, keys, allowed signers, allow-list, source checks, controller files)
    without its approvers' signed approvals (throughline policy approve).
The last three are judged on the head's tree; one the base already had is
listed ("already at base"), not refused.

With --forge, the verdict is also set as the commit status "throughline/check"
on --head.

Exit codes: 0 pass; 2 a revision does not resolve; 3 refused; 4 a policy,
manifest, record or controller file is invalid.`

// checkStatusContext is the commit status check --forge sets.
const checkStatusContext = "throughline/check"

// checkOptions are the flags of check.
type checkOptions struct {
	repo, base, head, output string
	json                     bool
	driftFiles               []string
	ff                       forgeFlags
	tg                       trustGateFlags
}

func (o *checkOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", ".", "the GitOps repository")
	f.StringVar(&o.base, "base", "", "the change's base revision (the PR's target branch)")
	f.StringVar(&o.head, "head", "", "the change's head revision")
	f.StringArrayVar(&o.driftFiles, "drift-record", nil, "a drift record for the promotion gate of a promotion change (repeatable)")
	outputFlag(f, &o.output, "output: text or json", "text", "json")
	f.BoolVar(&o.json, "json", false, "same as --output json")
	o.ff.addFlags(f)
	o.tg.addFlags(f)
}

func newCheckCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &checkOptions{}
	return leaf(&cobra.Command{
		Use:   "check --repo DIR --base REV --head REV",
		Short: "The every-PR check: render every environment before and after, refuse what no PR may change",
		Long:  checkLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *checkOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.base == "" || o.head == "" {
		return exitcode.Usagef("--base and --head are required")
	}
	if o.json {
		o.output = "json"
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	r, err := gitops.OpenLocal(ctx, o.repo)
	if err != nil {
		return err
	}
	if err := r.ReadInProcess(); err != nil { // hundreds of reads (every environment's judges at two revisions): no process each
		return err
	}
	r.Charts = chartSource()
	v, err := gate.CheckChange(ctx, r, gate.Request{Base: o.base, Head: o.head, DriftFiles: o.driftFiles, Now: time.Now(),
		Renderer: buildVersion(), Trust: o.tg.options()})
	if err != nil {
		return err
	}
	g.log.Info().Str("gate", "repository").Bool("ok", v.Repository.OK).Strs("rules", gate.Rules(v.Repository.Findings)).
		Int("refusals", len(v.Repository.Refusals)).Str("traceId", v.Repository.TraceID).Msg("gate decision")
	if v.Promotion != nil {
		logPromotionGate(g.log, v.Promotion)
	}
	if o.output == "json" {
		err = writeJSON(stdout, v)
	} else {
		err = v.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	statusErr := setCheckStatus(ctx, fc, v)
	if !v.OK {
		if statusErr != nil {
			g.log.Error().Err(statusErr).Msg("setting the commit status")
		}
		return exitcode.Refuse(gate.RuleRepositoryCheck, "change %s refused: %d reason(s) (listed on stdout)",
			gate.ShortRevision(v.Repository.Head), v.Refusals())
	}
	return statusErr
}

// setCheckStatus sets the verdict as the commit status of the head (no
// forge: nothing).
func setCheckStatus(ctx context.Context, fc *forge.Client, v *gate.Verdict) error {
	if fc == nil {
		return nil
	}
	st := forge.CommitStatus{SHA: v.Repository.Head, Context: checkStatusContext, State: forge.StatusSuccess,
		Description: fmt.Sprintf("%d rendered difference(s), no refusal", v.Repository.Changes())}
	if !v.OK {
		st.State, st.Description = forge.StatusFailure, fmt.Sprintf("refused: %d reason(s)", v.Refusals())
	}
	return fc.SetCommitStatus(ctx, st)
}
