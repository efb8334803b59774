package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/rollback"
)

// rollbackResult is what rollback did.
type rollbackResult struct {
	Proposal            *proposal         `json:"proposal"`
	From                string            `json:"from"`
	To                  rollback.Accepted `json:"to"`
	IrreversibleWarning []string          `json:"irreversibleMigration,omitempty"`
	// Unproven lists acceptances Git claims without proof (a record
	// ACCEPTED without its evidence file, evidence disagreeing with the
	// record): never rollback targets, reported so they get fixed.
	Unproven []rollback.Unproven `json:"unproven,omitempty"`
}

func newRollbackCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		repo, app, env, to, targetPath, cluster, output string
		acceptIrreversible                              bool
		ff                                              forgeFlags
		rf                                              registryFlags
	)
	cmd := &cobra.Command{
		Use:   "rollback --repo DIR --app APP --env ENV --to DIGEST|previous",
		Short: "Propose, as a new desired state, a digest the environment accepted before",
		Long: `Roll an environment back by proposing a new desired state, never by reverting
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
policy rule.

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
migrated data.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app == "" || env == "" || to == "" {
				return exitcode.Usagef("--app, --env and --to are required")
			}
			if output != "text" && output != "json" {
				return exitcode.Usagef("-o %q: want text or json", output)
			}
			fc, err := ff.client()
			if err != nil {
				return err
			}
			rc, err := rf.client()
			if err != nil {
				return err
			}
			if targetPath == "" {
				targetPath = path.Join("apps", app, "overlays", env)
			}
			ctx := cmd.Context()
			r, err := openPromoteRepo(ctx, repo)
			if err != nil {
				return err
			}
			res, err := rollbackTo(ctx, r, rc, app, env, to, targetPath, cluster, acceptIrreversible)
			if err != nil {
				return err
			}
			for _, u := range res.Unproven {
				g.log.Warn().Str("promotion", u.PromotionID).Str("digest", u.Digest).Str("commit", u.Commit).Str("reason", u.Reason).
					Msg("acceptance claimed without proof: not a rollback target")
			}
			for _, w := range res.IrreversibleWarning {
				g.log.Warn().Str("workload", w).Msg("rolling back past an irreversible migration (acknowledged)")
			}
			if fc != nil && !res.Proposal.Existing {
				title := fmt.Sprintf("rollback %s in %s to %s (%s)", app, env, promoteShortDigest(res.Proposal.Record.Artifact.Digest), res.Proposal.Record.PromotionID)
				pr, err := fc.OpenPullRequest(ctx, forge.PullRequest{Title: title, Head: res.Proposal.Branch, Base: r.base, Body: rollbackBody(res)})
				if err != nil {
					return fmt.Errorf("branch %s pushed, but opening the pull request failed: %w", res.Proposal.Branch, err)
				}
				res.Proposal.PR = pr.URL
			}
			if output == "json" {
				return promoteWriteJSON(stdout, res)
			}
			verb := "rollback proposed"
			if res.Proposal.Existing {
				verb = "existing rollback attempt"
			}
			fmt.Fprintf(stdout, "%s %s: %s in %s %s -> %s, state %s (accepted at %s as %s, evidence %s)\n", verb, res.Proposal.Record.PromotionID, app, env,
				res.From, res.To.Artifact.Digest, res.Proposal.Record.State, res.To.Commit, res.To.PromotionID, res.To.Evidence)
			fmt.Fprintf(stdout, "branch %s at %s\n", res.Proposal.Branch, res.Proposal.Commit)
			if res.Proposal.PR != "" {
				fmt.Fprintf(stdout, "pull request %s\n", res.Proposal.PR)
			}
			for _, c := range res.Proposal.Changes {
				fmt.Fprintln(stdout, "  "+c.String())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&app, "app", "", "application name")
	f.StringVar(&env, "env", "", "environment to roll back")
	f.StringVar(&to, "to", "", `digest (sha256:<hex>, or 12+ hex digits) accepted before in ENV, or "previous"`)
	f.StringVar(&targetPath, "path", "", "environment overlay, relative to the repository (default apps/APP/overlays/ENV)")
	f.StringVar(&cluster, "cluster", "", "target cluster (default: the policy file's, else the environment name)")
	f.BoolVar(&acceptIrreversible, "accept-irreversible-migration", false, "roll back although the current artifact's workload is marked "+rollback.AnnotationIrreversible)
	f.StringVarP(&output, "output", "o", "text", "output: text or json")
	ff.add(cmd)
	rf.add(cmd)
	return cmd
}

func rollbackTo(ctx context.Context, r *promoteRepo, rc *registry.Client, app, env, to, targetPath, cluster string, acceptIrreversible bool) (*rollbackResult, error) {
	baseRev, err := r.baseRev(ctx)
	if err != nil {
		return nil, err
	}
	cur, err := r.readRecord(ctx, baseRev, app, env)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, &exitcode.Refusal{Rule: "rollback-target", Reason: fmt.Sprintf("no promotion record %s on %s: nothing was ever accepted in %s", promotion.RecordPath(app, env), r.base, env)}
	}
	hist, err := rollback.History(ctx, r.Repo, baseRev, app, env)
	if err != nil {
		return nil, err
	}
	pick, err := rollback.Pick(hist, to, cur.Artifact.Digest, env)
	if err != nil {
		return nil, err
	}
	// Still in the registry?
	name, _ := overlay.SplitImage(pick.Artifact.Image)
	ok, err := rc.Exists(ctx, name+"@"+pick.Artifact.Digest)
	if err != nil {
		return nil, registryError(fmt.Errorf("rollback target %s@%s: %w", name, pick.Artifact.Digest, err))
	}
	if !ok {
		return nil, &exitcode.Refusal{Rule: "rollback-target", Reason: fmt.Sprintf("rollback target %s@%s no longer exists in the registry (deleted): pick another accepted digest", name, pick.Artifact.Digest)}
	}
	// Irreversible migration of the artifact desired now?
	tree, cleanup, err := r.export(ctx, baseRev)
	if err != nil {
		return nil, err
	}
	objs, _, err := promoteRawRender(ctx, tree.root, targetPath)
	cleanup()
	if err != nil {
		return nil, err
	}
	marked := rollback.Irreversible(objs, cur.Artifact.Digest)
	if len(marked) > 0 && !acceptIrreversible {
		return nil, &exitcode.Refusal{Rule: "rollback-target", Reason: fmt.Sprintf("the current artifact %s is marked %s=\"true\" on %s: the older artifact may not read the migrated data; "+
			"roll forward instead, or pass --accept-irreversible-migration", cur.Artifact.Digest, rollback.AnnotationIrreversible, strings.Join(marked, ", "))}
	}
	from := cur.Artifact.Digest
	p, err := proposeArtifact(ctx, r, baseRev, app, pick.Artifact, env, targetPath, cluster, proposeOptions{
		By:         "throughline rollback",
		MinAttempt: hist.Attempts[pick.Artifact.Digest],
		Verify: func(rec *promotion.Record) error {
			return rec.VerifyByPriorAcceptance(pick.Prior(), pick.DesiredRevision, pick.ObservedRevision, pick.RenderedHash, time.Now(), "throughline rollback")
		},
		Message: func(rec *promotion.Record) string {
			return fmt.Sprintf("rollback %s in %s to %s\n\nPromotion: %s\nAttempt-Key: %s %s %s %d\nRollback-From: %s\nRollback-To: %s (%s, accepted at %s)\n",
				app, env, promoteShortDigest(rec.Artifact.Digest), rec.PromotionID, app, rec.Artifact.Digest, env, rec.Attempt,
				from, pick.Artifact.Digest, pick.PromotionID, pick.Commit)
		},
	})
	if err != nil {
		return nil, err
	}
	return &rollbackResult{Proposal: p, From: from, To: pick, IrreversibleWarning: marked, Unproven: hist.Unproven}, nil
}

func rollbackBody(res *rollbackResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Rollback of `%s` in `%s` from `%s` to `%s`.\n\n", res.Proposal.Record.App, res.Proposal.Record.Target.Environment, res.From, res.To.Artifact.Digest)
	fmt.Fprintf(&b, "The target digest was ACCEPTED in this environment as `%s` (record and evidence at commit `%s`, observed revision `%s`, evidence `%s`); "+
		"the record is VERIFIED by that prior acceptance, which `throughline promote check` re-reads from Git.\n\n",
		res.To.PromotionID, res.To.Commit, res.To.ObservedRevision, res.To.Evidence)
	for _, u := range res.Unproven {
		fmt.Fprintf(&b, "Warning: acceptance claimed without proof, not a rollback target: %s\n\n", u.String())
	}
	if len(res.IrreversibleWarning) > 0 {
		fmt.Fprintf(&b, "**Irreversible migration acknowledged** on: %s\n\n", strings.Join(res.IrreversibleWarning, ", "))
	}
	b.WriteString(proposalBody(res.Proposal))
	return b.String()
}
