package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
)

// splitChartArgs tells chart references (oci://, https://, http://) from
// image references.
func splitChartArgs(args []string) (charts, images []string) {
	for _, a := range args {
		if chartsource.IsRemote(a) {
			charts = append(charts, a)
		} else {
			images = append(images, a)
		}
	}
	return charts, images
}

// resolveCharts resolves chart references (repo/name:version) to their
// digest and prints them as resolve prints images.
func (o *resolveOptions) resolveCharts(ctx context.Context, g *globals, stdout io.Writer, args []string) error {
	f := o.rf.chartFetcher()
	var ok []*chartsource.Resolved
	var errs []error
	for _, a := range args {
		ref, err := chartsource.ParseRef(a)
		if err != nil {
			if chartsource.IsFloating(err) {
				return &exitcode.Refusal{Rule: chartsource.RuleFloatingChartVersion, Object: a, Err: err}
			}
			return &exitcode.InvalidInput{Err: err}
		}
		r, err := f.Resolve(ctx, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.log.Debug().Str("chart", a).Str("digest", r.Digest).Msg("resolved")
		ok = append(ok, r)
	}
	if o.output == "json" {
		if ok == nil {
			ok = []*chartsource.Resolved{}
		}
		if err := writeJSON(stdout, ok); err != nil {
			return err
		}
	} else if len(ok) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHART\tKIND\tDIGEST\tPACKAGE\tSIZE")
		for _, r := range ok {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Ref, r.Kind, r.Digest, r.Package, r.Size)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}
