package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
)

// newPromoteReconcileCommand records APPROVED -> RECONCILING: the commit
// that desires the artifact in the target, once the promotion PR is merged.
func newPromoteReconcileCommand(g *globals, stdout io.Writer) *cobra.Command {
	var repo, app, to, revision, records, by string
	cmd := &cobra.Command{
		Use:   "reconcile --repo DIR --app APP --to ENV [--revision REV]",
		Short: "Record RECONCILING: the merged commit that desires the artifact (the post-merge job)",
		Long: `Run after the promotion PR is merged. Renders the target at REV (default: the
tip of the base branch), checks that the record is APPROVED and that its
approval still holds for that render (not expired, the approval input hash
matches: same digest, rendered hash, path, cluster and throughline version), and
moves the record to RECONCILING with desiredRevision REV. The record is
committed with a compare-and-swap push to --records-branch (default: the base
branch); keep it a branch the controllers do not watch, since the notifier
accepts only the desired commit itself.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app == "" || to == "" {
				return exitcode.Usagef("--app and --to are required")
			}
			ctx := cmd.Context()
			r, err := openPromoteRepo(ctx, repo)
			if err != nil {
				return err
			}
			if revision == "" {
				if revision, err = r.baseRev(ctx); err != nil {
					return err
				}
			} else if revision, err = r.Resolve(ctx, revision); err != nil {
				return exitcode.Usagef("--revision: %v", err)
			}
			if records == "" {
				records = r.base
			}
			hash, err := renderedHashAt(ctx, r, revision, app, to)
			if err != nil {
				return err
			}
			now := time.Now()
			rec, sha, err := r.updateRecord(ctx, records, app, to, ": merge the promotion PR first", func(_ context.Context, _ string, rec *promotion.Record) (string, error) {
				in := rec.InputFor(buildVersion())
				in.RenderedHash = hash
				if why := rec.ApprovalVoid(in, "", now); why != "" {
					return "", &exitcode.Refusal{Rule: "approval", Reason: fmt.Sprintf("%s at %s: %s", rec.PromotionID, revision, why)}
				}
				return fmt.Sprintf("promotion %s: RECONCILING %s\n", rec.PromotionID, revision), exitcode.RefuseErr("record-transition", rec.Reconcile(revision, now, by))
			})
			if err != nil {
				return err
			}
			g.log.Debug().Str("promotion", rec.PromotionID).Str("commit", sha).Msg("reconciling")
			_, err = fmt.Fprintf(stdout, "RECONCILING %s desired %s (record on %s at %s)\n", rec.PromotionID, revision, records, sha)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repo", "", "the GitOps repository")
	f.StringVar(&app, "app", "", "application name")
	f.StringVar(&to, "to", "", "target environment")
	f.StringVar(&revision, "revision", "", "the merged commit that desires the artifact (default: the base branch's tip)")
	f.StringVar(&records, "records-branch", "", "branch the record is committed to (default: the base branch)")
	f.StringVar(&by, "by", "throughline promote reconcile", "who records the transition")
	return cmd
}

// renderedHashAt renders the target of APP/ENV's record as it is at rev.
func renderedHashAt(ctx context.Context, r *promoteRepo, rev, app, env string) (string, error) {
	rec, err := r.readRecord(ctx, rev, app, env)
	if err != nil {
		return "", err
	}
	if rec == nil {
		return "", &exitcode.Refusal{Rule: "approval", Reason: fmt.Sprintf("%s has no record %s: merge the promotion PR first", rev, promotion.RecordPath(app, env))}
	}
	tree, cleanup, err := r.export(ctx, rev)
	if err != nil {
		return "", err
	}
	defer cleanup()
	d, err := promoteDeclare(ctx, tree.root, rec.Target.Path, env)
	if err != nil {
		return "", err
	}
	return d.Hash, nil
}
