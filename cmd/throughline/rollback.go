package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promote"
)

const rollbackLong = `Roll an environment back by proposing a new desired state, never by reverting
history or force-pushing.

The target is a digest the environment accepted somewhere in the base
branch's history, as Git proves it: a version of the record
(promotion/<app>/<env>.yaml) ACCEPTED for that digest, and in the same commit
the notifier's evidence file (evidence/<env>/<app>/<promotionId>.json) saying
ACCEPTED for the same digest and revision. "previous" is the newest such digest
other than the one desired now. A digest never accepted in the environment is
refused (exit 3); so is a digest whose acceptance is only claimed (a record
ACCEPTED without its evidence file, or evidence disagreeing with the record,
or rewritten since): those are listed as warnings on every rollback. The
digest must still exist in the registry (refused when deleted; exit 5 when
the registry cannot be reached) and the overlay with it must pass every
policy rule. ENV must be an environment of the registry of
throughline-policy.yaml (at the base branch), which gives the overlay path and
the cluster; --path and --cluster, when given, must be ENV's (exit 3).

The rollback goes through the promote propose path: only the digest in the
overlay's images: entry changes, a record is written, and both are committed on
a new attempt branch throughline/promote/<app>/<env>/<digest12>-<n> (pushed by
compare-and-swap; a PR/MR with --forge). The record is born VERIFIED by its
prior acceptance (verifiedIn kind prior-acceptance: the earlier promotionId,
its evidence file and the commit holding both), which promote check re-reads
from Git; approve, check, merge and reconcile then go as for any promotion.

When a workload of the current artifact carries the annotation
throughline.dev/irreversible-migration: "true", the rollback is refused unless
--accept-irreversible-migration is given: the older artifact may not read the
migrated data.

The rollback target's own earlier record's supply-chain evidence is
re-verified against TODAY's trust policy of ENV (at the base branch): a target
that policy no longer accepts (no evidence recorded, a signer's key rotated
out, a scan now too old) is refused (exit 3 naming the rule, the image and the
evidence digest). Verified bundles are cached under --trust-cache-dir.

A freeze holds a rollback unless the environment says rollbackInFreeze: allow
(refused, exit 3, naming the freeze and the next opening), and a rollback
outside the environment's windows is refused the same way. --for-override opens
the attempt all the same: it then goes in only with signed freeze overrides
(promote approve --override-freeze), which promote check and reconcile require.`

// rollbackOptions are the flags of rollback.
type rollbackOptions struct {
	repo, app, env, to, targetPath, cluster, output string
	acceptIrreversible, forOverride                 bool
	ff                                              forgeFlags
	rf                                              registryFlags
	tg                                              trustGateFlags
}

func (o *rollbackOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.env, "env", "", "environment to roll back")
	f.StringVar(&o.to, "to", "", `digest (sha256:<hex>, or 12+ hex digits) accepted before in ENV, or "previous"`)
	f.StringVar(&o.targetPath, "path", "", "environment overlay, relative to the repository "+
		"(default: the environment registry's, else apps/APP/overlays/ENV); must be ENV's")
	f.StringVar(&o.cluster, "cluster", "", "target cluster (default: the environment registry's, else the environment name); must be the environment's")
	f.BoolVar(&o.acceptIrreversible, "accept-irreversible-migration", false,
		"roll back although the current artifact's workload is marked "+ledger.AnnotationIrreversible)
	f.BoolVar(&o.forOverride, "for-override", false, forOverrideUsage)
	outputFlag(f, &o.output, "output: text or json", "text", "json")
	o.ff.addFlags(f)
	o.tg.addFlags(f)
}

func newRollbackCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &rollbackOptions{}
	cmd := leaf(&cobra.Command{
		Use:   "rollback --repo DIR --app APP --env ENV --to DIGEST|previous",
		Short: "Propose, as a new desired state, a digest the environment accepted before",
		Long:  rollbackLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
	o.rf.add(cmd)
	return cmd
}

func (o *rollbackOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.env == "" || o.to == "" {
		return exitcode.Usagef("--app, --env and --to are required")
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	rc, err := o.rf.client()
	if err != nil {
		return err
	}
	r, err := openRepo(ctx, o.repo)
	if err != nil {
		return err
	}
	exists := func(ctx context.Context, ref string) (bool, error) {
		ok, err := rc.Exists(ctx, ref)
		return ok, registryError(err)
	}
	res, err := promote.Rollback(ctx, r, promote.RollbackRequest{App: o.app, Env: o.env, To: o.to, Path: o.targetPath, Cluster: o.cluster,
		AcceptIrreversible: o.acceptIrreversible, Exists: exists, Renderer: buildVersion(),
		Trust: o.tg.options(), ForOverride: o.forOverride})
	if err != nil {
		return err
	}
	warnRollback(g, res)
	p := res.Proposal
	title := fmt.Sprintf("rollback %s in %s to %s (%s)", o.app, o.env, ledger.ShortDigest(p.Record.Artifact.Digest), p.Record.PromotionID)
	if err := p.OpenPullRequest(ctx, fc, r.Base, title, res.PullRequestBody()); err != nil {
		return err
	}
	if o.output == "json" {
		return writeJSON(stdout, res)
	}
	verb := "rollback proposed"
	if p.Existing {
		verb = "existing rollback attempt"
	}
	fmt.Fprintf(stdout, "%s %s: %s in %s %s -> %s, state %s (accepted at %s as %s, evidence %s)\n", verb, p.Record.PromotionID, o.app, o.env,
		res.From, res.To.Artifact.Digest, p.Record.State, res.To.Commit, res.To.PromotionID, res.To.Evidence)
	printProposal(stdout, p)
	return nil
}

// warnRollback logs the unproven acceptances and the acknowledged
// irreversible migrations of a rollback.
func warnRollback(g *globals, res *promote.RollbackResult) {
	for _, u := range res.Unproven {
		g.log.Warn().Str("promotion", u.PromotionID).Str("digest", u.Digest).Str("commit", u.Commit).Str("reason", u.Reason).
			Msg("acceptance claimed without proof: not a rollback target")
	}
	for _, w := range res.IrreversibleWarning {
		g.log.Warn().Str("workload", w).Msg("rolling back past an irreversible migration (acknowledged)")
	}
}
