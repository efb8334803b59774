package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promote"
)

const promoteReconcileLong = `Run after the promotion PR is merged. Renders the target at REV (default: the
tip of the base branch), checks that the record is APPROVED and that its
approval still holds for that render (not expired, the approval input hash
matches: same digest, rendered hash, path, cluster and throughline version), and
moves the record to RECONCILING with desiredRevision REV. The record is
committed with a compare-and-swap push to --records-branch (default: the base
branch).

The notifier then accepts the controller's revision when it is the desired
commit, or a later commit of the branch (another app's promotion, this
record's own commits) whose Acceptance declares exactly the approved rendered
hash; a later commit rendering other objects, or a revision off the branch,
halts the promotion. A failure of the controller itself (an apply error, a
health check timing out) is waited for until the environment's
reconcileDeadline.

When the environment's source is an OCI artifact (environments.<env>.source.oci
in throughline-policy.yaml), the desired revision is the manifest digest its
repository:tag resolves to, recorded with REV as reconciling.desiredCommit,
provided the artifact's org.opencontainers.image.revision annotation names REV
(flux push artifact --revision <branch>@sha1:<commit>). An artifact of an
earlier commit is exit 5 (run again once CI has pushed); one naming no commit,
a later or an unrelated one is refused (exit 3, rule oci-artifact). The
notifier then accepts that digest only (docs/oci-sources.md).`

// promoteReconcileOptions are the flags of promote reconcile.
type promoteReconcileOptions struct {
	repo, app, to, revision, records, by string
	reg                                  registryFlags
}

func (o *promoteReconcileOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.to, "to", "", "target environment")
	f.StringVar(&o.revision, "revision", "", "the merged commit that desires the artifact (default: the base branch's tip)")
	f.StringVar(&o.records, "records-branch", "", "branch the record is committed to (default: the base branch)")
	f.StringVar(&o.by, "by", "throughline promote reconcile", "who records the transition")
}

// newPromoteReconcileCommand records APPROVED -> RECONCILING: the commit
// that desires the artifact in the target, once the promotion PR is merged.
func newPromoteReconcileCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteReconcileOptions{}
	cmd := leaf(&cobra.Command{
		Use:   "reconcile --repo DIR --app APP --to ENV [--revision REV]",
		Short: "Record RECONCILING: the merged commit that desires the artifact (the post-merge job)",
		Long:  promoteReconcileLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
	o.reg.add(cmd)
	return cmd
}

func (o *promoteReconcileOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.to == "" {
		return exitcode.Usagef("--app and --to are required")
	}
	r, err := gitops.Open(ctx, o.repo)
	if err != nil {
		return err
	}
	arts, err := o.reg.client()
	if err != nil {
		return err
	}
	t, revision, err := promote.Reconcile(ctx, r, promote.ReconcileRequest{App: o.app, To: o.to, Revision: o.revision,
		RecordsBranch: o.records, By: o.by, Now: time.Now(), Renderer: buildVersion(), Artifacts: arts})
	if err != nil {
		return err
	}
	g.log.Debug().Str("promotion", t.Record.PromotionID).Str("commit", t.Commit).Msg("reconciling")
	if _, err = fmt.Fprintf(stdout, "RECONCILING %s desired %s (record on %s at %s)\n", t.Record.PromotionID, revision, t.Branch, t.Commit); err != nil {
		return err
	}
	for _, b := range t.Closed {
		fmt.Fprintf(stdout, "deleted the merged attempt branch %s\n", b)
	}
	for _, why := range t.NotClosed {
		g.log.Warn().Str("reason", why).Msg("a merged attempt branch was not deleted")
	}
	return nil
}
