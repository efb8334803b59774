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
	"github.com/throughline-dev/throughline/render"
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
	f.StringVarP(&o.output, "output", "o", "text", "output: text or json")
	f.BoolVar(&o.json, "json", false, "same as --output json")
	o.ff.addFlags(f)
	o.tg.addFlags(f)
}

func newCheckCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check --repo DIR --base REV --head REV",
		Short: "The every-PR check: render every environment before and after, refuse what no PR may change",
		Long:  checkLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, stdout) },
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *checkOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.base == "" || o.head == "" {
		return exitcode.Usagef("--base and --head are required")
	}
	if o.json {
		o.output = "json"
	}
	if err := checkOutput(o.output); err != nil {
		return err
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
	if o.output == "json" {
		err = promoteWriteJSON(stdout, v)
	} else {
		printVerdict(stdout, v)
	}
	if err != nil {
		return err
	}
	statusErr := setCheckStatus(ctx, fc, v)
	if !v.OK {
		if statusErr != nil {
			g.log.Error().Err(statusErr).Msg("setting the commit status")
		}
		return exitcode.Refuse(gate.RuleRepositoryCheck, "change %s refused: %d reason(s) (listed on stdout)", shortRev(v.Repository.Head), v.Refusals())
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

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// printVerdict prints the verdict of check as text.
func printVerdict(w io.Writer, v *gate.Verdict) {
	printRepoCheck(w, v.Repository)
	if v.Promotion != nil {
		printCheck(w, v.Promotion)
	}
	if v.OK {
		fmt.Fprintln(w, "OK: no refusal")
	}
}

// printRepoCheck prints the repository check as text: per environment its
// differences with their class, then the refusals.
func printRepoCheck(w io.Writer, rep *gate.RepositoryReport) {
	fmt.Fprintf(w, "change %s..%s: %d file(s) changed\n", shortRev(rep.Base), shortRev(rep.Head), len(rep.Files))
	if rep.Registry == "" {
		fmt.Fprintln(w, "no environment registered (throughline-policy.yaml at base): nothing rendered")
	}
	for _, e := range rep.Environments {
		prot := ""
		if e.Protected {
			prot = "protected, "
		}
		n := 0
		for _, o := range e.Overlays {
			n += len(o.Changes)
			if o.Checks != "" {
				n++
			}
		}
		fmt.Fprintf(w, "environment %s (%scluster %s): %d overlay(s), %d difference(s)\n", e.Name, prot, e.Cluster, len(e.Overlays), n)
		for _, o := range e.Overlays {
			if len(o.Changes) == 0 && o.Checks == "" {
				continue
			}
			note := ""
			if o.Promotion {
				note = ", the promotion's target: judged by promote check"
			}
			fmt.Fprintf(w, "  %s (app %s%s):\n", o.Path, o.App, note)
			for _, c := range o.Changes {
				fmt.Fprintln(w, "    "+c.String())
			}
			if o.Checks != "" {
				fmt.Fprintf(w, "    runtime checks %s (%s)\n", o.Checks, render.ChecksFile)
			}
		}
	}
	if p := rep.Promotion; p != nil {
		fmt.Fprintf(w, "promotion of %s to %s (%s): judged by promote check\n", p.App, p.Environment, p.Record)
	}
	for _, j := range rep.Judges {
		need := "not protected: listed, no approval needed"
		if j.Protected {
			need = fmt.Sprintf("protected: %d of %d signed approvals", j.Approved, j.Required)
		}
		fmt.Fprintf(w, "what judges %s changes (change %s; %s):\n", j.Environment, j.Change, need)
		for _, c := range j.Words() {
			fmt.Fprintln(w, "  "+c)
		}
	}
	for _, f := range rep.Preexisting {
		fmt.Fprintf(w, "already at base (not refused) %s: %s\n", f.Rule, f.Reason)
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "REFUSED %s: %s\n", f.Rule, f.Reason)
	}
}
