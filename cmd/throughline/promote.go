package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promote"
)

const promoteLong = `A promotion moves an artifact identity (an image digest) from one environment
to the next through the promotion/v1 record at promotion/<app>/<env>.yaml:

  CANDIDATE -> VERIFIED -> APPROVED -> RECONCILING -> ACCEPTED
  (any failed gate -> HALTED or REJECTED, with the reason)

  propose   write the source environment's accepted digest into the target
            overlay and a CANDIDATE record, on a branch named from the attempt
            key; push it and open a PR/MR when a forge is configured
  verify    record the VERIFIED gate from the source environment's evidence
  approve   record the APPROVED gate, bound to the approval input hash
  check     the PR job: refuse anything but the verified, approved digest
  reconcile the post-merge job: record RECONCILING with the merged commit
  status    show every record`

func newPromoteCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote",
		Short: "Promote a verified artifact digest between environments through promotion records",
		Long:  promoteLong,
	}
	cmd.AddCommand(
		newPromoteProposeCommand(g, stdout),
		newPromoteVerifyCommand(g, stdout),
		newPromoteApproveCommand(g, stdout),
		newPromoteReconcileCommand(g, stdout),
		newPromoteStatusCommand(stdout),
		newPromoteCheckCommand(g, stdout),
	)
	return cmd
}

const promoteProposeLong = `Read the digest ACCEPTED in the source environment's record
(promotion/<app>/<from>.yaml on the base branch), write only that digest into
the target overlay's images: entry (replicas, hosts, resources and every other
parameter of the target stay), write the target's CANDIDATE record, and commit
both on the branch throughline/promote/<app>/<to>/<digest12>-<attempt>.

The environment registry of throughline-policy.yaml (read at the base branch)
gives the target's overlay path and cluster; --path and --cluster, when given,
must be the target environment's, and --from and --to must be environments it
lists (exit 3 naming the registry otherwise).

The attempt key is app + digest + target environment + attempt number. The
same request again returns the existing attempt (and opens no second PR); a
changed target (parameters, cluster, renderer version) makes a new attempt.

With a remote, the branch is pushed (never forced: when another proposer
created it first, its attempt is returned). With --forge, a pull/merge request
is opened with the classified diff as its body; otherwise the branch is printed.`

// promoteProposeOptions are the flags of promote propose.
type promoteProposeOptions struct {
	repo, app, from, to, targetPath, cluster, output string
	ff                                               forgeFlags
}

func (o *promoteProposeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.from, "from", "", "source environment (its record must be ACCEPTED)")
	f.StringVar(&o.to, "to", "", "target environment")
	f.StringVar(&o.targetPath, "path", "", "target overlay, relative to the repository "+
		"(default: the environment registry's, else apps/APP/overlays/TO); must be TO's")
	f.StringVar(&o.cluster, "cluster", "", "target cluster (default: the environment registry's, else the environment name); must be the environment's")
	f.StringVarP(&o.output, "output", "o", "text", "output: text or json")
	o.ff.addFlags(f)
}

func newPromoteProposeCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteProposeOptions{}
	cmd := &cobra.Command{
		Use:   "propose --repo DIR --app APP --from ENV --to ENV",
		Short: "Propose the digest accepted in one environment for the next, on a branch",
		Long:  promoteProposeLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, stdout) },
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *promoteProposeOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.from == "" || o.to == "" {
		return exitcode.Usagef("--app, --from and --to are required")
	}
	if o.from == o.to {
		return exitcode.Usagef("--from and --to are both %q", o.to)
	}
	if err := checkOutput(o.output); err != nil {
		return err
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	r, err := gitops.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	p, err := promote.Propose(ctx, r, promote.ProposeRequest{App: o.app, From: o.from, To: o.to, Path: o.targetPath, Cluster: o.cluster,
		Renderer: buildVersion()})
	if err != nil {
		return err
	}
	if fc != nil && !p.Existing {
		title := fmt.Sprintf("promote %s %s to %s (%s)", o.app, promote.ShortDigest(p.Record.Artifact.Digest), o.to, p.Record.PromotionID)
		if err := openPR(ctx, fc, r.Base, title, p, proposalBody(p)); err != nil {
			return err
		}
	}
	g.log.Debug().Str("promotion", p.Record.PromotionID).Str("branch", p.Branch).Bool("existing", p.Existing).Msg("proposed")
	if o.output == "json" {
		return promoteWriteJSON(stdout, p)
	}
	verb := "proposed"
	if p.Existing {
		verb = "existing attempt"
	}
	fmt.Fprintf(stdout, "%s %s: %s %s -> %s, state %s\n", verb, p.Record.PromotionID, o.app, p.Record.Artifact.Digest, o.to, p.Record.State)
	printProposal(stdout, p)
	return nil
}

// checkOutput refuses an -o other than text or json.
func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return exitcode.Usagef("-o %q: want text or json", output)
	}
	return nil
}

// openPR opens the pull request of the pushed proposal p on base and
// records its URL in p.
func openPR(ctx context.Context, fc *forge.Client, base, title string, p *promote.Proposal, body string) error {
	pr, err := fc.OpenPullRequest(ctx, forge.PullRequest{Title: title, Head: p.Branch, Base: base, Body: body})
	if err != nil {
		return fmt.Errorf("branch %s pushed, but opening the pull request failed: %w", p.Branch, err)
	}
	p.PR = pr.URL
	return nil
}

// printProposal prints the branch, the pull request and the changes of p.
func printProposal(w io.Writer, p *promote.Proposal) {
	fmt.Fprintf(w, "branch %s at %s\n", p.Branch, p.Commit)
	if p.PR != "" {
		fmt.Fprintf(w, "pull request %s\n", p.PR)
	}
	for _, c := range p.Changes {
		fmt.Fprintln(w, "  "+c.String())
	}
}

const promoteVerifyLong = `Read the evidence FILE (YAML or JSON: environment, digest, desiredRevision,
observedRevision, renderedHash, runtimeEvidence) of the source environment and
move the attempt's record from CANDIDATE to VERIFIED on its branch.

Refused (exit 3) when the evidence is for another digest, when the source
environment's record is not ACCEPTED for that digest, when the evidence's
desired revision is not the one the source record reconciled, or when the
controller observed another revision. The push is a compare-and-swap: on a
non-fast-forward it fetches, re-applies and retries; it never forces.`

// promoteVerifyOptions are the flags of promote verify.
type promoteVerifyOptions struct {
	repo, app, to, branch, evidence string
}

func (o *promoteVerifyOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.to, "to", "", "target environment of the attempt")
	f.StringVar(&o.branch, "branch", "", "attempt branch (default: the only open one of APP/TO)")
	f.StringVar(&o.evidence, "evidence", "", "evidence file of the source environment")
}

func newPromoteVerifyCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify --repo DIR --app APP --to ENV --evidence FILE",
		Short: "Record the VERIFIED gate from the source environment's evidence",
		Long:  promoteVerifyLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, stdout) },
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *promoteVerifyOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.to == "" || o.evidence == "" {
		return exitcode.Usagef("--app, --to and --evidence are required")
	}
	ev, err := promote.ReadEvidence(ctx, o.evidence)
	if err != nil {
		return err
	}
	r, err := gitops.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	t, err := promote.Verify(ctx, r, promote.VerifyRequest{App: o.app, To: o.to, Branch: o.branch, Evidence: ev, File: o.evidence, Now: time.Now()})
	if err != nil {
		return err
	}
	g.log.Debug().Str("promotion", t.Record.PromotionID).Str("commit", t.Commit).Msg("verified")
	_, err = fmt.Fprintf(stdout, "VERIFIED %s on %s at %s\n", t.Record.PromotionID, t.Branch, t.Commit)
	return err
}

const promoteApproveLong = `Render the target at the attempt branch's tip and move the record from VERIFIED
to APPROVED with the approver, the expiry and the approval input hash: sha256
over the artifact digest, the target rendered hash, the target path, the target
cluster, throughline's version and expiresAt. The approval is void when it
expires, when any input changes, or when the target moves on.

--expires takes a duration from now (24h) or an RFC 3339 time.`

// promoteApproveOptions are the flags of promote approve.
type promoteApproveOptions struct {
	repo, app, to, branch, approver, expires string
}

func (o *promoteApproveOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.to, "to", "", "target environment of the attempt")
	f.StringVar(&o.branch, "branch", "", "attempt branch (default: the only open one of APP/TO)")
	f.StringVar(&o.approver, "approver", "", "who approves (recorded)")
	f.StringVar(&o.expires, "expires", "", "expiry: a duration from now (24h) or an RFC 3339 time")
}

func newPromoteApproveCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteApproveOptions{}
	cmd := &cobra.Command{
		Use:   "approve --repo DIR --app APP --to ENV --approver NAME --expires 24h",
		Short: "Record the APPROVED gate, bound to the exact inputs, until an expiry",
		Long:  promoteApproveLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, stdout) },
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *promoteApproveOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.to == "" || o.approver == "" || o.expires == "" {
		return exitcode.Usagef("--app, --to, --approver and --expires are required")
	}
	now := time.Now()
	exp, err := parseExpiry(o.expires, now)
	if err != nil {
		return err
	}
	r, err := gitops.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	t, err := promote.Approve(ctx, r, promote.ApproveRequest{App: o.app, To: o.to, Branch: o.branch, Approver: o.approver,
		Expires: exp, Now: now, Renderer: buildVersion()})
	if err != nil {
		return err
	}
	rec := t.Record
	g.log.Debug().Str("promotion", rec.PromotionID).Str("commit", t.Commit).Msg("approved")
	_, err = fmt.Fprintf(stdout, "APPROVED %s by %s until %s (input hash %s) on %s at %s\n",
		rec.PromotionID, o.approver, rec.Approval.ExpiresAt.Format(time.RFC3339), rec.Approval.InputHash, t.Branch, t.Commit)
	return err
}

// parseExpiry reads --expires: a duration from now or an RFC 3339 time,
// in the future.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, exitcode.Usagef("--expires %s: must be in the future", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, exitcode.Usagef("--expires %q: want a duration (24h) or an RFC 3339 time", s)
	}
	if !t.After(now) {
		return time.Time{}, exitcode.Usagef("--expires %s is in the past", s)
	}
	return t, nil
}

// promoteStatusOptions are the flags of promote status.
type promoteStatusOptions struct {
	repo, app, output string
}

func (o *promoteStatusOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository")
	f.StringVar(&o.app, "app", "", "only this application")
	f.StringVarP(&o.output, "output", "o", "text", "output: text or json")
}

func newPromoteStatusCommand(stdout io.Writer) *cobra.Command {
	o := &promoteStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status --repo DIR [--app APP]",
		Short: "Show every promotion record, on the base branch and on open attempt branches",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), stdout) },
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *promoteStatusOptions) run(ctx context.Context, stdout io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	r, err := gitops.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	rows, err := promote.Status(ctx, r, o.app)
	if err != nil {
		return err
	}
	if o.output == "json" {
		return promoteWriteJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tENV\tATTEMPT\tSTATE\tDIGEST\tPROMOTION\tREF\tNOTE")
	for _, row := range rows {
		note := row.Reason
		if row.ExpiresAt != nil && note == "" {
			note = "approval expires " + row.ExpiresAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", row.App, row.Environment, row.Attempt, row.State, promote.ShortDigest(row.Digest),
			row.PromotionID, row.Ref, note)
	}
	return tw.Flush()
}

// promoteWriteJSON writes v as indented JSON.
func promoteWriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// proposalBody is the PR/MR description: the classified diff.
func proposalBody(p *promote.Proposal) string {
	var b strings.Builder
	rec := p.Record
	fmt.Fprintf(&b, "Promotion `%s` (attempt %d): `%s` into **%s** (`%s`, cluster `%s`).\n\n", rec.PromotionID, rec.Attempt,
		rec.Artifact.Image, rec.Target.Environment, rec.Target.Path, rec.Target.Cluster)
	fmt.Fprintf(&b, "Target rendered hash: `%s` (was `%s`), throughline %s.\n\n", rec.Target.RenderedHash, rec.Target.BaseRenderedHash,
		rec.Target.Renderer)
	b.WriteString("| class | object | field | before | after |\n|---|---|---|---|---|\n")
	for _, c := range p.Changes {
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` | `%s` |\n", c.Class, c.Object, c.Field, c.Before, c.After)
	}
	b.WriteString("\nThe PR job (`throughline promote check`) passes once the record is VERIFIED and APPROVED.\n")
	return b.String()
}
