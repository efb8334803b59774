package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promote"
)

func newPolicyCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Approve a change to what judges a protected environment",
	}
	cmd.AddCommand(newPolicyApproveCommand(g, stdout))
	return cmd
}

const policyApproveLong = `Approve the change --branch makes to what judges --environment: its registry
entry in throughline-policy.yaml (every field), the key and trusted-root files
its trust policy names, the allowed-signers file, the allow-list entries in its
scope, and the runtime checks of the environments it promotes from. throughline
check lists that change old -> new and, for a protected environment, refuses it
(exit 3) until the pull request carries minApprovals signed approvals of it.

An approval is a commit on --branch, signed with your own SSH key (git config
gpg.format ssh; git config user.signingkey KEY), that adds one approval to
approvals/policy/ENV.yaml, bound to the change's hash: the approver is the
principal the base branch's allowed-signers file gives your key, who must be one
of the environment's approvers (at the base branch) and must not have written a
commit of the change. Any later change to what judges the environment makes a
new hash, and the approvals must be given again. --approver, when given, must be
your key's principal. --expires takes a duration from now (24h) or an RFC 3339
time.

Exit codes: 0 approved; 2 usage; 3 refused (not an approver, the proposer, no
change, approved already); 4 an invalid policy or allowed-signers file.`

type policyApproveOptions struct {
	repo, env, branch, base string
	approvalFlags
}

func newPolicyApproveCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &policyApproveOptions{}
	cmd := leaf(&cobra.Command{
		Use:   "approve --repo DIR --environment ENV --branch BRANCH [--base main] --expires 24h",
		Short: "Sign an approval of the change a branch makes to what judges a protected environment",
		Long:  policyApproveLong,
	}, nil, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "the GitOps repository")
	f.StringVar(&o.env, "environment", "", "the environment whose judges the branch changes")
	f.StringVar(&o.branch, "branch", "", "the pull request's branch")
	f.StringVar(&o.base, "base", "", "the branch it merges into (default: the repository's base branch)")
	o.addFlags(f, "a cross-check of your signing key's principal")
	return cmd
}

func (o *policyApproveOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.env == "" || o.branch == "" {
		return exitcode.Usagef("--environment and --branch are required")
	}
	now := time.Now()
	exp, err := o.expiry(now)
	if err != nil {
		return err
	}
	r, err := gitops.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	a, err := promote.ApprovePolicy(ctx, r, promote.PolicyApproveRequest{Environment: o.env, Branch: o.branch, Base: o.base, Approver: o.approver,
		Expires: exp, Now: now})
	if err != nil {
		return err
	}
	g.log.Debug().Str("environment", o.env).Str("commit", a.Commit).Msg("policy change approved")
	d := a.Document
	if _, err := fmt.Fprintf(stdout, "signed approval %d of %d by %s of what judges %s (change %s) until %s on %s at %s:\n",
		len(d.Approvals), a.Diff.Required, a.Approver, o.env, d.Change, exp.UTC().Format(time.RFC3339), a.Branch, a.Commit); err != nil {
		return err
	}
	for _, c := range d.Changes {
		if _, err := fmt.Fprintln(stdout, "  "+c); err != nil {
			return err
		}
	}
	return nil
}
