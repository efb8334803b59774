package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promote"
	"github.com/throughline-dev/throughline/promotion"
)

const promoteLong = `A promotion moves an artifact identity (an image digest) from one environment
to the next through the promotion/v1 record at promotion/<app>/<env>.yaml:

  CANDIDATE -> VERIFIED -> APPROVED -> RECONCILING -> ACCEPTED
  (any failed gate -> HALTED or REJECTED, with the reason)

  candidate CI's entry point: verify a new image's signatures and attestations
            and propose it as a CANDIDATE of the first environment
  propose   write the source environment's accepted digest into the target
            overlay and a CANDIDATE record, on a branch named from the attempt
            key; push it and open a PR/MR when a forge is configured
  verify    record the VERIFIED gate from the source environment's evidence
  approve   record the APPROVED gate, bound to the approval input hash (a
            signed commit where the environment lists approvers)
  reject    move an open attempt to REJECTED, with the reason
  check     the PR job: refuse anything but the verified, approved digest
  reconcile the post-merge job: record RECONCILING with the merged commit
  status    show the base branch's records and the open attempts (--all)`

func newPromoteCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote",
		Short: "Promote a verified artifact digest between environments through promotion records",
		Long:  promoteLong,
	}
	cmd.AddCommand(
		newPromoteProposeCommand(g, stdout),
		newPromoteCandidateCommand(g, stdout),
		newPromoteVerifyCommand(g, stdout),
		newPromoteApproveCommand(g, stdout),
		newPromoteRejectCommand(g, stdout),
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
The new record carries the source record's supply-chain evidence as recorded.

` + trustGateHelp + `

The environment registry of throughline-policy.yaml (read at the base branch)
gives the target's overlay path and cluster; --path and --cluster, when given,
must be the target environment's, and --from and --to must be environments it
lists (exit 3 naming the registry otherwise).

The attempt key is app + digest + target environment + attempt number. The
same request again returns the existing attempt (and opens no second PR); a
changed target (parameters, cluster, renderer version) makes a new attempt, and
so does the same digest after its attempt was HALTED or REJECTED (attempt n+1,
even when the overlay already holds the digest: only the record is new).

A new attempt supersedes the open attempts of the same app and environment:
its commit message names each (Supersedes: <promotionId> (<branch>)), their
branches are deleted (compare-and-swap: a branch someone pushed to since is
left, and the output says so) and, with --forge, their pull requests closed.

With a remote, the branch is pushed (never forced: when another proposer
created it first, its attempt is returned). With --forge, a pull/merge request
is opened with the classified diff as its body; otherwise the branch is printed.

A closed target (a freeze holds, or outside its windows, as the base branch's
policy says) takes no new attempt (exit 3, naming the freeze or the windows and
the next opening). --for-override opens it all the same: it then goes in only
with signed freeze overrides (promote approve --override-freeze), which
promote check and reconcile require.`

// promoteProposeOptions are the flags of promote propose.
type promoteProposeOptions struct {
	repo, app, from, to, targetPath, cluster, output string
	forOverride                                      bool
	ff                                               forgeFlags
	tg                                               trustGateFlags
}

// forOverrideUsage is the usage of propose's and rollback's --for-override.
const forOverrideUsage = "open the attempt although the environment is closed (a freeze, or outside its windows): " +
	"it goes in only with signed freeze overrides (promote approve --override-freeze)"

func (o *promoteProposeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.from, "from", "", "source environment (its record must be ACCEPTED)")
	f.StringVar(&o.to, "to", "", "target environment")
	f.StringVar(&o.targetPath, "path", "", "target overlay, relative to the repository "+
		"(default: the environment registry's, else apps/APP/overlays/TO); must be TO's")
	f.StringVar(&o.cluster, "cluster", "", "target cluster (default: the environment registry's, else the environment name); must be the environment's")
	f.BoolVar(&o.forOverride, "for-override", false, forOverrideUsage)
	outputFlag(f, &o.output, "output: text or json", "text", "json")
	o.ff.addFlags(f)
	o.tg.addFlags(f)
}

func newPromoteProposeCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteProposeOptions{}
	return leaf(&cobra.Command{
		Use:   "propose --repo DIR --app APP --from ENV --to ENV",
		Short: "Propose the digest accepted in one environment for the next, on a branch",
		Long:  promoteProposeLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *promoteProposeOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.from == "" || o.to == "" {
		return exitcode.Usagef("--app, --from and --to are required")
	}
	if o.from == o.to {
		return exitcode.Usagef("--from and --to are both %q", o.to)
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	r, err := openRepo(ctx, o.repo)
	if err != nil {
		return err
	}
	p, err := promote.Propose(ctx, r, promote.ProposeRequest{App: o.app, From: o.from, To: o.to, Path: o.targetPath, Cluster: o.cluster,
		Renderer: buildVersion(), Trust: o.tg.options(), ForOverride: o.forOverride})
	if err != nil {
		return err
	}
	title := fmt.Sprintf("promote %s %s to %s (%s)", o.app, ledger.ShortDigest(p.Record.Artifact.Digest), o.to, p.Record.PromotionID)
	if err := p.OpenPullRequest(ctx, fc, r.Base, title, p.PullRequestBody()); err != nil {
		return err
	}
	g.log.Debug().Str("promotion", p.Record.PromotionID).Str("branch", p.Branch).Bool("existing", p.Existing).Msg("proposed")
	if o.output == "json" {
		return writeJSON(stdout, p)
	}
	verb := "proposed"
	if p.Existing {
		verb = "existing attempt"
	}
	fmt.Fprintf(stdout, "%s %s: %s %s -> %s, state %s\n", verb, p.Record.PromotionID, o.app, p.Record.Artifact.Digest, o.to, p.Record.State)
	printProposal(stdout, p)
	return nil
}

// printProposal prints the branch, the pull request and the changes of p.
func printProposal(w io.Writer, p *promote.Proposal) {
	fmt.Fprintf(w, "branch %s at %s\n", p.Branch, p.Commit)
	if p.Closed != "" {
		fmt.Fprintf(w, "closed: %s; the attempt goes in only with signed freeze overrides (promote approve --override-freeze)\n", p.Closed)
	}
	if p.PR != "" {
		fmt.Fprintf(w, "pull request %s\n", p.PR)
	}
	for _, s := range p.Superseded {
		what := "branch " + s.Branch + " deleted"
		if !s.Deleted {
			what = "branch " + s.Branch + " not deleted: " + s.NotDeleted
		}
		for _, n := range s.PullRequests {
			what += fmt.Sprintf(", pull request #%d closed", n)
		}
		fmt.Fprintf(w, "supersedes %s: %s\n", s.PromotionID, what)
	}
	for _, c := range p.Changes {
		fmt.Fprintln(w, "  "+c.String())
	}
}

const promoteVerifyLong = `Read the source environment's runtime evidence from Git and move the attempt's
record from CANDIDATE to VERIFIED on its branch.

The source is --from, else the only other environment whose record on the base
branch is ACCEPTED for the attempt's digest. Its record is read on the base
branch and the notifier's evidence/v1 file it names (accepted.runtimeEvidence,
evidence/<env>/<app>/<promotionId>.json) at the commit where that record became
ACCEPTED. The VERIFIED record and its commit message cite that file and commit.

Refused (exit 3, rule source-evidence) when the record is not ACCEPTED for the
attempt's digest; when the evidence file does not exist there, or was changed
since; when it is not an ACCEPTED decision for that attempt, digest and
revisions; when the observed revision is neither the desired commit nor a later
commit of the branch rendering the approved objects; when a Pod of the digest
runs another imageID; when it is older than the policy's evidenceMaxAge. A file
that is not evidence/v1 is invalid input (exit 4). Refused (rule
evidence-differs) too when the attempt's record carries other supply-chain
evidence than the source record. The push is a compare-and-swap: on a
non-fast-forward it fetches, re-applies and retries; it never forces.` + "\n\n" + trustGateHelp

// promoteVerifyOptions are the flags of promote verify.
type promoteVerifyOptions struct {
	attemptFlags
	from, evidence string
	tg             trustGateFlags
}

func (o *promoteVerifyOptions) addFlags(f *pflag.FlagSet) {
	o.attemptFlags.addFlags(f)
	f.StringVar(&o.from, "from", "", "source environment (default: the only other one ACCEPTED for the attempt's digest)")
	f.StringVar(&o.evidence, "evidence", "", "removed: the evidence is read from Git")
	_ = f.MarkHidden("evidence")
	o.tg.addFlags(f)
}

func newPromoteVerifyCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteVerifyOptions{}
	return leaf(&cobra.Command{
		Use:   "verify --repo DIR --app APP --to ENV [--from ENV]",
		Short: "Record the VERIFIED gate from the source environment's evidence in Git",
		Long:  promoteVerifyLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *promoteVerifyOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.evidence != "" {
		return exitcode.Usagef("--evidence is gone: promote verify reads the source environment's evidence/v1 from Git " +
			"(its record's accepted.runtimeEvidence, at the commit where it became ACCEPTED); name the source with --from")
	}
	r, err := o.open(ctx)
	if err != nil {
		return err
	}
	t, err := promote.Verify(ctx, r, promote.VerifyRequest{App: o.app, From: o.from, To: o.to, Branch: o.branch, Now: time.Now(),
		Trust: o.tg.options()})
	if err != nil {
		return err
	}
	g.log.Debug().Str("promotion", t.Record.PromotionID).Str("commit", t.Commit).Msg("verified")
	_, err = fmt.Fprintf(stdout, "VERIFIED %s on %s%s at %s%s\n", t.Record.PromotionID, t.Branch, pickedNote(o.branch), t.Commit,
		verifiedBy(t.Record))
	return err
}

// candidacyProof names a candidacy's own proof: the bundles recorded and
// sealed at candidacy, and their evidence manifest.
func candidacyProof(ev *promotion.SupplyChain) string {
	if ev == nil {
		return "its candidacy, with no evidence recorded"
	}
	var items []string
	for _, it := range ev.Items {
		items = append(items, it.Kind+" "+it.Digest)
	}
	proof := "no bundle: the policy requires none"
	if len(items) > 0 {
		proof = strings.Join(items, ", ")
	}
	if ev.Manifest != "" {
		proof += "; evidence manifest " + ev.Manifest
	}
	return fmt.Sprintf("its candidacy %s in %s: %s", ev.Candidacy, ev.Environment, proof)
}

// verifiedBy is " (<what verified rec>)": its candidacy's own evidence,
// the source environment's evidence file and commit, or the prior
// acceptance; "" when the record says none (never an empty field).
func verifiedBy(rec *promotion.Record) string {
	v := rec.VerifiedIn
	switch {
	case v == nil:
		return ""
	case v.IsCandidacy():
		return " (" + candidacyProof(rec.Artifact.Evidence) + ")"
	case v.IsPriorAcceptance():
		return fmt.Sprintf(" (its prior acceptance %s: %s at %s)", v.PriorAcceptance.PromotionID, v.PriorAcceptance.Evidence,
			v.PriorAcceptance.Commit)
	case v.RuntimeEvidence != "" && v.EvidenceCommit != "":
		return fmt.Sprintf(" (evidence %s at %s)", v.RuntimeEvidence, v.EvidenceCommit)
	case v.RuntimeEvidence != "":
		return fmt.Sprintf(" (evidence %s)", v.RuntimeEvidence)
	}
	return ""
}

const promoteApproveLong = `Render the target at the attempt branch's tip and move the record from VERIFIED
to APPROVED with the approver, the expiry and the approval input hash: sha256
over the artifact digest, the target rendered hash, the target path, the target
cluster, throughline's version and expiresAt. The approval is void when it
expires, when any input changes, or when the target moves on.

In an environment whose registry entry (throughline-policy.yaml on the base
branch) lists approvers, an approval is a commit signed with your own SSH key
(git config gpg.format ssh; git config user.signingkey KEY): the approver is
the principal the allowed-signers file (allowedSigners, on the base branch)
gives your key, who must be one of the environment's approvers and must not
have proposed the change. The record stays VERIFIED until minApprovals distinct
approvers signed. --approver is then optional and, when given, must be that
principal. Elsewhere --approver is recorded as given.

When the attempt cannot be approved (its branch renders another hash than the
record proposed, or a policy rule refuses the render) the record moves to
REJECTED with that reason (exit 3).

--expires takes a duration from now (24h) or an RFC 3339 time.

With --override-freeze the commit records a freeze override instead of an
approval: one entry of the record's overrides (approver, --reason, expiry, and
an input hash over the promotion id, the approval inputs, the reason and the
expiry), signed like an approval by an approver of the environment who did not
propose the change. It lets the attempt through a closed environment (a freeze,
or outside its windows) at promote check and at reconcile while minApprovals
distinct approvers' overrides are valid and unexpired; the state does not
change. --reason is required; --expires must be at most 24h ahead. An override
expired when the merge is reconciled HALTS the promotion, naming the expiry.`

// promoteApproveOptions are the flags of promote approve.
type promoteApproveOptions struct {
	attemptFlags
	approvalFlags
	overrideFreeze bool
	reason         string
}

func (o *promoteApproveOptions) addFlags(f *pflag.FlagSet) {
	o.attemptFlags.addFlags(f)
	o.approvalFlags.addFlags(f, "who approves (recorded; with signed approvals, a cross-check of your signing key's principal)")
	f.BoolVar(&o.overrideFreeze, "override-freeze", false,
		"record a signed freeze override (lets the attempt through a freeze or outside its windows until --expires, at most 24h) instead of an approval")
	f.StringVar(&o.reason, "reason", "", "why the promotion goes in while the environment is closed (required with --override-freeze; recorded)")
}

func newPromoteApproveCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteApproveOptions{}
	return leaf(&cobra.Command{
		Use:   "approve --repo DIR --app APP --to ENV [--approver NAME] --expires 24h [--override-freeze --reason TEXT]",
		Short: "Record the APPROVED gate (a signed commit where the environment has approvers), bound to the exact inputs, until an expiry",
		Long:  promoteApproveLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *promoteApproveOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	now := time.Now()
	if o.reason != "" && !o.overrideFreeze {
		return exitcode.Usagef("--reason goes with --override-freeze (an approval records no reason)")
	}
	exp, err := o.expiry(now)
	if err != nil {
		return err
	}
	r, err := o.open(ctx)
	if err != nil {
		return err
	}
	if o.overrideFreeze {
		return o.override(ctx, g, r, exp, now, stdout)
	}
	t, err := promote.Approve(ctx, r, promote.ApproveRequest{App: o.app, To: o.to, Branch: o.branch, Approver: o.approver,
		Expires: exp, Now: now, Renderer: buildVersion()})
	if err != nil {
		return err
	}
	rec := t.Record
	g.log.Debug().Str("promotion", rec.PromotionID).Str("commit", t.Commit).Msg("approved")
	if rec.Approval == nil {
		last := rec.Approvals[len(rec.Approvals)-1]
		_, err = fmt.Fprintf(stdout, "signed approval %d of %s by %s until %s on %s%s at %s: the record stays VERIFIED until enough approvers sign\n",
			len(rec.Approvals), rec.PromotionID, last.Approver, last.ExpiresAt.Format(time.RFC3339), t.Branch, pickedNote(o.branch), t.Commit)
		return err
	}
	_, err = fmt.Fprintf(stdout, "APPROVED %s by %s until %s (input hash %s) on %s%s at %s\n",
		rec.PromotionID, rec.Approval.Approver, rec.Approval.ExpiresAt.Format(time.RFC3339), rec.Approval.InputHash,
		t.Branch, pickedNote(o.branch), t.Commit)
	return err
}

// override records the freeze override and says who overrode, why and
// until when.
func (o *promoteApproveOptions) override(ctx context.Context, g *globals, r *gitops.Repo, exp, now time.Time, stdout io.Writer) error {
	t, err := promote.Override(ctx, r, promote.OverrideRequest{App: o.app, To: o.to, Branch: o.branch, Approver: o.approver, Reason: o.reason,
		Expires: exp, Now: now, Renderer: buildVersion()})
	if err != nil {
		return err
	}
	rec := t.Record
	last := rec.Overrides[len(rec.Overrides)-1]
	g.log.Debug().Str("promotion", rec.PromotionID).Str("commit", t.Commit).Msg("freeze override")
	_, err = fmt.Fprintf(stdout, "freeze override %d of %s by %s until %s (%s) on %s%s at %s: the gates let it through %s while it is closed "+
		"once minApprovals approvers' overrides hold\n", len(rec.Overrides), rec.PromotionID, last.Approver, last.ExpiresAt.Format(time.RFC3339),
		last.Reason, t.Branch, pickedNote(o.branch), t.Commit, rec.Target.Environment)
	return err
}

const promoteRejectLong = `Move the attempt's record to REJECTED with the reason, by a compare-and-swap
commit on its branch (never forced). The PR gate refuses a REJECTED record; a
fix makes a new candidate (promote propose), or the same digest again (attempt
n+1). A record that is already final (ACCEPTED, HALTED, REJECTED) is refused
(exit 3). With --forge, the attempt's open pull/merge request is closed: the
attempt is finished.`

// promoteRejectOptions are the flags of promote reject.
type promoteRejectOptions struct {
	attemptFlags
	reason, by string
	ff         forgeFlags
}

func (o *promoteRejectOptions) addFlags(f *pflag.FlagSet) {
	o.attemptFlags.addFlags(f)
	f.StringVar(&o.reason, "reason", "", "why the attempt is rejected (recorded)")
	f.StringVar(&o.by, "by", "throughline promote reject", "who rejects (recorded in the history)")
	o.ff.addFlags(f)
}

func newPromoteRejectCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteRejectOptions{}
	return leaf(&cobra.Command{
		Use:   "reject --repo DIR --app APP --to ENV --reason TEXT",
		Short: "Move an open attempt's record to REJECTED, with the reason",
		Long:  promoteRejectLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *promoteRejectOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.reason == "" {
		return exitcode.Usagef("--reason is required")
	}
	r, err := o.open(ctx)
	if err != nil {
		return err
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	t, err := promote.Reject(ctx, r, promote.RejectRequest{App: o.app, To: o.to, Branch: o.branch, Reason: o.reason, By: o.by, Now: time.Now()})
	if err != nil {
		return err
	}
	g.log.Debug().Str("promotion", t.Record.PromotionID).Str("commit", t.Commit).Msg("rejected")
	if _, err = fmt.Fprintf(stdout, "REJECTED %s on %s at %s: %s\n", t.Record.PromotionID, t.Branch, t.Commit, t.Record.Reason); err != nil {
		return err
	}
	if fc == nil {
		return nil
	}
	closed, err := fc.ClosePullRequests(ctx, t.Branch)
	if err != nil {
		return fmt.Errorf("%s is REJECTED, but closing its pull request failed: %w", t.Record.PromotionID, err)
	}
	for _, n := range closed {
		fmt.Fprintf(stdout, "closed pull request #%d of %s\n", n, t.Branch)
	}
	return nil
}

// promoteStatusOptions are the flags of promote status.
type promoteStatusOptions struct {
	repo, app, output string
	all               bool
	delivery          deliveryOptions
}

const promoteStatusLong = `List the promotion records on the base branch and on the open attempt
branches (throughline/promote/<app>/<env>/<digest12>-<attempt>), each attempt in
each state once. An attempt branch is merged when its tip is an ancestor of the
base branch, or when its record reached the base branch in the same or a later
state (a squash or rebase merge); it is closed when its record is HALTED or
REJECTED, or when a later attempt replaced it on the base branch. Merged and
closed attempt branches are listed only with --all, each row saying which (the
BRANCH column: base, open, merged or closed) and why. Below the table (text
output), each environment the policy closes now (outside its windows, in a
freeze) with the rule and its next opening.`

func (o *promoteStatusOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository")
	f.StringVar(&o.app, "app", "", "only this application")
	f.BoolVar(&o.all, "all", false, "also list merged and closed attempt branches")
	outputFlag(f, &o.output, "output: text or json", "text", "json")
	o.delivery.addFlags(f)
}

func newPromoteStatusCommand(stdout io.Writer) *cobra.Command {
	o := &promoteStatusOptions{}
	return leaf(&cobra.Command{
		Use:   "status --repo DIR [--app APP] [--all]",
		Short: "Show the promotion records on the base branch and on open attempt branches",
		Long:  promoteStatusLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, stdout) })
}

func (o *promoteStatusOptions) run(ctx context.Context, stdout io.Writer) error {
	if o.delivery.since != "" {
		return o.runDelivery(ctx, stdout)
	}
	r, err := openRepo(ctx, o.repo)
	if err != nil {
		return err
	}
	status := ledger.Status
	if o.all {
		status = ledger.StatusAll
	}
	rows, err := status(ctx, r, o.app)
	if err != nil {
		return err
	}
	if o.output == "json" {
		return writeJSON(stdout, rows)
	}
	if err := ledger.WriteStatusTable(stdout, rows); err != nil {
		return err
	}
	// Below the table, the environments that take no promotion now.
	base, err := r.BaseRev(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	closed, err := gate.Closed(ctx, r, base, now)
	if err != nil {
		return err
	}
	for _, c := range closed {
		fmt.Fprintf(stdout, "closed: %s (%s, %s): %s\n", c.Environment, c.Rule, c.Field, c.Reason)
	}
	// The freeze overrides of open attempts, as their records claim them.
	for _, row := range rows {
		if promotion.Terminal(row.State) || row.State == promotion.Reconciling {
			continue
		}
		for _, ov := range row.ActiveOverrides(now) {
			fmt.Fprintf(stdout, "override: %s %s (%s): by %s until %s: %s\n", row.Environment, row.PromotionID, row.Ref, ov.Approver,
				ov.ExpiresAt.Format(time.RFC3339), ov.Reason)
		}
	}
	return nil
}

// pickedNote says, when no --branch was given, that the branch is the only
// open attempt (finished attempts' branches are not counted).
func pickedNote(given string) string {
	if given != "" {
		return ""
	}
	return " (picked: the only open attempt branch)"
}
