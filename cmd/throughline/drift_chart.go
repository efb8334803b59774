package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/registry"
)

// recordChart resolves a chart version (repo/name:version) and writes its
// drift record (kind ChartResolution).
func (o *driftRecordOptions) recordChart(ctx context.Context, g *globals, stdout io.Writer, arg string) error {
	ref, err := chartsource.ParseRef(arg)
	if err != nil {
		if chartsource.IsFloating(err) {
			return &exitcode.Refusal{Rule: chartsource.RuleFloatingChartVersion, Object: arg, Err: err}
		}
		return &exitcode.InvalidInput{Err: err}
	}
	r, err := o.rf.chartFetcher().Resolve(ctx, ref)
	if err != nil {
		return err
	}
	rec := chartsource.NewRecord(r, time.Now())
	ext := strings.ToLower(filepath.Ext(o.out))
	data, err := rec.Marshal(ext == ".yaml" || ext == ".yml")
	if err != nil {
		return fmt.Errorf("encoding chart drift record: %w", err)
	}
	if err := atomicfile.Write(o.out, data, 0o644); err != nil {
		return err
	}
	g.log.Info().Str("chart", rec.Reference).Str("digest", rec.Digest).Str("file", o.out).Msg("recorded")
	_, err = fmt.Fprintf(stdout, "recorded chart %s -> %s in %s\n", rec.Reference, rec.Digest, o.out)
	return err
}

// readDriftFiles reads image (TagResolution) and chart (ChartResolution)
// drift records, each read once and bounded; an unreadable or invalid one
// is exit 4 naming the file.
func readDriftFiles(files []string) ([]registry.SourcedRecord, []chartsource.SourcedRecord, error) {
	var images []registry.SourcedRecord
	var charts []chartsource.SourcedRecord
	for _, f := range files {
		data, err := registry.ReadRecordBytes(f)
		if err != nil {
			return nil, nil, err
		}
		if chartsource.IsRecord(data) {
			r, err := chartsource.ParseRecord(f, data)
			if err != nil {
				return nil, nil, &exitcode.InvalidInput{Err: err}
			}
			charts = append(charts, chartsource.SourcedRecord{Record: r, File: f})
			continue
		}
		r, err := registry.ParseRecord(f, data)
		if err != nil {
			return nil, nil, &exitcode.InvalidInput{Err: err}
		}
		images = append(images, registry.SourcedRecord{Record: r, File: f})
	}
	return images, charts, nil
}

// checkCharts compares the chart records with each other and (unless
// offline) with the source now; it prints and returns one line per chart
// version whose package changed.
func (o *driftCheckOptions) checkCharts(ctx context.Context, stdout io.Writer, recs []chartsource.SourcedRecord) (
	lines []string, versions int, pending []error) {
	if len(recs) == 0 {
		return nil, 0, nil
	}
	var now chartsource.Resolver
	if !o.offline {
		now = o.rf.chartFetcher()
	}
	rep := chartsource.CheckDrift(ctx, recs, now)
	for _, d := range rep.Drifts {
		lines = append(lines, d.Error())
		fmt.Fprintln(stdout, d.Error())
	}
	return lines, rep.Versions, rep.Unverifiable
}
