package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// chartFetcher is the chart fetcher of a command with registry flags: the
// same credentials, plain-HTTP rule and timeout; the cache beside the
// registry's (none with --no-registry-cache).
func (r *registryFlags) chartFetcher() *chartsource.Fetcher {
	o := chartsource.Options{Insecure: r.insecure, Timeout: r.requestTimeout, UserAgent: "throughline/" + buildVersion()}
	if !r.noCache {
		o.CacheDir = filepath.Join(filepath.Dir(r.cacheDir), "charts")
	}
	return chartsource.NewFetcher(o)
}

// pinCharts pins the remote charts of the application at abs into their
// lock files (with check: lists the unpinned ones and refuses them). done
// says that nothing is left for the image pin: --charts, or a Helm-style
// app. With --set it does nothing (--set writes one image).
func (o *pinOptions) pinCharts(ctx context.Context, root, abs, arg string, stdout io.Writer) (done bool, err error) {
	if len(o.set.sets) > 0 {
		return false, nil
	}
	uses, isChart, err := chartsource.Uses(ctx, root, abs)
	if err != nil || (len(uses) == 0 && !isChart && !o.chartsOnly) {
		return false, err
	}
	done = o.chartsOnly || isChart
	fsys, err := render.NewConfinedFS(root, 0, nil)
	if err != nil {
		return done, &exitcode.InvalidInput{Err: err}
	}
	byDir, unpinned, err := chartsource.Unpinned(fsys, uses)
	if err != nil {
		return done, err
	}
	if o.check {
		return done, chartCheck(stdout, uses, unpinned, arg)
	}
	changes, err := chartsource.PinLocks(ctx, fsys, byDir, o.rf.chartFetcher())
	for _, c := range changes {
		fmt.Fprintln(stdout, c)
	}
	return done, err
}

func chartCheck(stdout io.Writer, uses, unpinned []chartsource.Use, arg string) error {
	if len(unpinned) == 0 {
		_, err := fmt.Fprintf(stdout, "OK every remote chart (%d) is pinned by digest\n", len(uses))
		return err
	}
	for _, u := range unpinned {
		fmt.Fprintf(stdout, "UNPINNED chart %s (%s %s; lock %s)\n", u.Ref, u.File, u.Field, chartsource.LockPath(u.Dir))
	}
	return exitcode.Refuse(chartsource.RuleUnpinnedChart, "%d remote chart(s) not pinned by digest (listed on stdout); run throughline pin %s",
		len(unpinned), arg)
}
