package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promote"
)

const adoptLong = `Record what an environment runs when throughline is installed as its
baseline, so that rollback has a target from day one.

adopt reads the digest of the app's image that ENV's overlay pins at the tip
of the base branch and commits, on the records branch, the environment's first
record: attempt 1, VERIFIED by adoption (verifiedIn kind adoption: it cites no
earlier evidence), APPROVED by --by for the render as it is, RECONCILING at that
commit. Nothing changes live. The notifier (throughline serve) then verifies the
desired commit against the cluster as for any promotion and records ACCEPTED
with its runtime evidence (Pods' imageIDs); only then is the baseline a
rollback target ("rollback --to previous" after the first promotion). A
baseline the cluster contradicts is HALTED by the notifier and is never a
target.

Refused (exit 3) when ENV already has a record: adoption is for an environment
throughline has not recorded yet. --image names the app's image repository when
the overlay pins more than one. --source-commit records the app's source commit
when known (default: the GitOps commit that pins the digest).`

// adoptOptions are the flags of adopt.
type adoptOptions struct {
	repo, app, env, image, sourceCommit, targetPath, cluster, records, by, output string
}

func (o *adoptOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.env, "env", "", "environment to adopt")
	f.StringVar(&o.image, "image", "", "the app's image repository (default: the one the overlay pins)")
	f.StringVar(&o.sourceCommit, "source-commit", "", "the app's source commit of the running image (default: the GitOps commit)")
	f.StringVar(&o.targetPath, "path", "", "environment overlay (default: the environment registry's); must be ENV's")
	f.StringVar(&o.cluster, "cluster", "", "target cluster (default: the environment registry's); must be ENV's")
	f.StringVar(&o.records, "records-branch", "", "branch the record is committed on (default: the base branch)")
	f.StringVar(&o.by, "by", "", "who adopts the environment (recorded as author and approver)")
	outputFlag(f, &o.output, "output: text or json", "text", "json")
}

func newAdoptCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &adoptOptions{}
	return leaf(&cobra.Command{
		Use:   "adopt --repo DIR --app APP --env ENV --by NAME",
		Short: "Record what an environment runs at installation as its baseline (a rollback target once the notifier accepts it)",
		Long:  adoptLong,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *adoptOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.env == "" {
		return exitcode.Usagef("--app and --env are required")
	}
	r, err := openRepo(ctx, o.repo)
	if err != nil {
		return err
	}
	a, err := promote.Adopt(ctx, r, promote.AdoptRequest{App: o.app, Env: o.env, Path: o.targetPath, Cluster: o.cluster, Image: o.image,
		SourceCommit: o.sourceCommit, RecordsBranch: o.records, By: o.by, Renderer: buildVersion(), Now: time.Now()})
	if err != nil {
		return err
	}
	g.log.Debug().Str("promotion", a.Record.PromotionID).Str("commit", a.Commit).Msg("adopted")
	if o.output == "json" {
		return writeJSON(stdout, a)
	}
	_, err = fmt.Fprintf(stdout, "adopted %s: %s in %s runs %s, RECONCILING at %s (record on %s at %s); "+
		"the notifier's live verification records it ACCEPTED\n",
		a.Record.PromotionID, o.app, o.env, a.Record.Artifact.Image, a.Revision, a.Branch, a.Commit)
	return err
}
