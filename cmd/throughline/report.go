package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

const reportLong = `Write the read-only web view of the chain as static HTML files into --out: a
grid of every app by every environment (index.html: state, tag and digest,
rendered hash, time in state, break-glass pause), one page per promotion record
(promotion/<promotionId>.html: the nine arrows of the chain, each proven,
pending or broken with the evidence it rests on, approvals with expiry, the
transitions) and one page per app (app/<app>.html: the digests each environment
accepted, what "rollback --to previous" picks and which targets it refuses).

Everything is read from the GitOps repository at --rev (default: its base
branch): promotion records, evidence files, break-glass pause records, the
environment registry. Links are relative, so the directory can be published as
a CI artifact. Each file is written atomically. Nothing is changed in Git, and
no Secret value or token is shown. "throughline serve --ui-bind-address" serves
the same pages.

With --forge (and --forge-url, --forge-repo), the open pull/merge requests of
the repository are listed once, and each attempt in flight shows its own
request (the one whose head is exactly the attempt's branch, in the
repository, into the base branch): number and link, draft or open, approvals
on the forge. A forge that fails or does not answer within 10 s makes the
cells say the list is unavailable; the pages are still written.`

// reportOptions are the flags of throughline report.
type reportOptions struct {
	repo, out, rev, commitURL string
	ff                        forgeFlags
}

func (o *reportOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", ".", "the GitOps repository")
	f.StringVar(&o.out, "out", "", "directory to write the pages to (created when missing)")
	f.StringVar(&o.rev, "rev", "", "revision to read (default: the repository's base branch)")
	f.StringVar(&o.commitURL, "commit-url", "", `link every commit, formatted with its id (e.g. "https://github.com/org/gitops/commit/%s")`)
	o.ff.use = "show the open pull/merge requests of the attempts in flight, read from"
	o.ff.addFlags(f)
}

func newReportCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o reportOptions
	return leaf(&cobra.Command{
		Use:     "report --repo DIR --out DIR",
		Short:   "Write the chain of every app and environment as static HTML pages",
		Long:    reportLong,
		Example: `  throughline report --repo . --out public/chain`,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *reportOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.out == "" {
		return exitcode.Usagef("--out DIR is required")
	}
	if err := chainview.CheckCommitURL(o.commitURL); err != nil {
		return exitcode.Usagef("--commit-url %q: %w", o.commitURL, err)
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	r, err := gitops.OpenLocal(ctx, o.repo)
	if err != nil {
		return err
	}
	if err := r.ReadInProcess(); err != nil { // thousands of reads: no process each
		return err
	}
	defer batchGC()()
	m, err := chainview.Load(ctx, r, chainview.Options{Rev: o.rev, Now: time.Now(), CommitURL: o.commitURL})
	if err != nil {
		return err
	}
	if fc != nil {
		m = m.WithPulls(chainview.FetchPulls(ctx, string(fc.Kind), chainview.ForgeLister(fc), chainview.DefaultPullsTimeout, func(err error) {
			g.log.Warn().Err(err).Msg("the pages say the pull request list is unavailable")
		}))
	}
	site, err := chainview.NewSite(m)
	if err != nil {
		return err
	}
	files, err := site.WriteSite(ctx, o.out)
	if err != nil {
		return err
	}
	for _, p := range m.Problems {
		g.log.Warn().Str("problem", p).Msg("a file cannot be read: the pages list it")
	}
	g.log.Info().Str("rev", m.Rev).Int("pages", len(files)).Str("out", o.out).Msg("report written")
	_, err = fmt.Fprintf(stdout, "wrote %d files (%d promotions, %d apps) read at %s to %s\n", len(files), len(m.Promotions), len(m.Apps), m.Rev, o.out)
	return err
}

// batchGCPercent is the collector's GOGC during the report's load.
const batchGCPercent = 400

// batchGC lets the heap grow to five times what is live before the
// collector runs, for the load of the whole history (every version of
// every record parsed, most of it garbage soon after): at the default 100
// the collector took about a sixth of the load's CPU at 50 apps x 4
// environments x 20 promotions (chainview BenchmarkHistory with GOGC=100
// and 400, docs/benchmarks.md), for about twice the peak memory. It
// returns the function that restores the setting. A GOGC or GOMEMLIMIT in
// the environment wins: then it does nothing.
func batchGC() func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(batchGCPercent)
	return func() { debug.SetGCPercent(old) }
}
