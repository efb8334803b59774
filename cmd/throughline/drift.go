package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/registry"
)

const driftLong = `A tag is a pointer that a registry can move at any time. "drift record" stores
what a tag resolved to and when; "drift check" compares the recorded resolutions
of each tag with each other and with the registry now, and refuses (exit 3) a
tag that resolved to two digests. A promotion carries the recorded digest and
never resolves the tag again. Helm chart versions (oci://host/path/name:version,
https://host/path/name:version) are recorded and checked the same way: a version
whose package changed is REJECTED naming both digests (docs/charts.md).`

func newDriftCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "Record tag resolutions and refuse a tag that moved",
		Long:  driftLong,
	}
	cmd.AddCommand(newDriftRecordCommand(g, stdout), newDriftCheckCommand(g, stdout))
	return cmd
}

const driftRecordLong = `Resolve the tag IMAGE (HEAD, falling back to GET) and write the resolution to
FILE atomically: YAML when FILE ends in .yaml or .yml, else JSON.`

// driftRecordOptions are the flags of throughline drift record.
type driftRecordOptions struct {
	rf  registryFlags
	out string
}

func (o *driftRecordOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.out, "out", "", "file to write the record to (.json, .yaml or .yml)")
}

func newDriftRecordCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o driftRecordOptions
	cmd := leaf(&cobra.Command{
		Use:     "record IMAGE --out FILE",
		Short:   "Resolve a tag and store the resolution (reference, digest, registry, time)",
		Long:    driftRecordLong,
		Example: `  throughline drift record ghcr.io/throughline-dev/checkout:1.4.2 --out records/staging.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitcode.Usagef("%s needs exactly one IMAGE, got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
	}, o.addFlags, func(ctx context.Context, args []string) error { return o.run(ctx, g, stdout, args[0]) })
	o.rf.add(cmd)
	return cmd
}

func (o *driftRecordOptions) run(ctx context.Context, g *globals, stdout io.Writer, image string) error {
	if o.out == "" {
		return exitcode.Usagef("--out FILE is required")
	}
	if chartsource.IsRemote(image) {
		return o.recordChart(ctx, g, stdout, image)
	}
	if strings.Contains(image, "@") {
		return exitcode.Usagef("%s is a digest reference: a digest cannot move, record a tag", image)
	}
	c, err := o.rf.client()
	if err != nil {
		return err
	}
	d, err := c.ResolveDigest(ctx, image)
	if err != nil {
		return registryError(err)
	}
	rec, err := registry.NewRecord(d, time.Now())
	if err != nil {
		return registryError(err)
	}
	if err := registry.WriteRecordFile(o.out, rec); err != nil {
		return err
	}
	g.log.Info().Str("image", rec.Reference).Str("digest", rec.Digest).Str("file", o.out).Msg("recorded")
	_, err = fmt.Fprintf(stdout, "recorded tag %s -> %s in %s\n", rec.Reference, rec.Digest, o.out)
	return err
}

const driftCheckLong = `Read the drift records FILE... and, for each tag, compare the recorded digests
with each other and (unless --offline) with what the registry says now.

Exit codes: 0 no tag moved; 3 a tag moved (REJECTED tag <ref> resolved to <d1>
and <d2>) or is gone; 4 a record is unreadable or inconsistent; 5 the registry
could not be asked (not decided: try again).`

// driftCheckOptions are the flags of throughline drift check.
type driftCheckOptions struct {
	rf      registryFlags
	offline bool
}

func (o *driftCheckOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.offline, "offline", false, "compare the records with each other only; do not ask the registry")
}

func newDriftCheckCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o driftCheckOptions
	cmd := leaf(&cobra.Command{
		Use:   "check FILE...",
		Short: "Refuse a tag whose recorded resolutions disagree with each other or with the registry now",
		Long:  driftCheckLong,
		Example: `  throughline drift check records/staging.json records/production.json
  throughline drift check --offline records/*.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitcode.Usagef("%s needs at least one FILE", cmd.CommandPath())
			}
			return nil
		},
	}, o.addFlags, func(ctx context.Context, args []string) error { return o.run(ctx, g, stdout, args) })
	o.rf.add(cmd)
	return cmd
}

func (o *driftCheckOptions) run(ctx context.Context, g *globals, stdout io.Writer, files []string) error {
	records, charts, err := readDriftFiles(files)
	if err != nil {
		return err
	}
	var now registry.DigestResolver
	if !o.offline && len(records) > 0 {
		c, err := o.rf.client()
		if err != nil {
			return err
		}
		now = c
	}
	rep := registry.CheckDrift(ctx, records, now)
	moved := map[string]bool{}
	var lines []string
	for _, d := range rep.Drifts {
		moved[d.Reference] = true
		lines = append(lines, d.Error())
		fmt.Fprintln(stdout, d.Error())
	}
	for _, r := range records {
		if !moved[r.Reference] {
			g.log.Debug().Str("tag", r.Reference).Str("digest", r.Digest).Str("file", r.File).Msg("resolution agrees")
		}
	}
	chartLines, versions, chartPending := o.checkCharts(ctx, stdout, charts)
	if len(lines)+len(chartLines) > 0 {
		rule := "moved-tag"
		if len(lines) == 0 {
			rule = chartsource.RuleChartVersionMoved
		}
		return &exitcode.Refusal{Rule: rule, Reason: fmt.Sprintf("%d of %d tags and %d of %d chart versions moved:\n%s",
			len(lines), rep.Tags, len(chartLines), versions, strings.Join(append(lines, chartLines...), "\n"))}
	}
	if pending := append(rep.Unverifiable, chartPending...); len(pending) > 0 {
		return exitcode.NotDecided(errors.Join(pending...))
	}
	what := "recorded resolutions agree with each other and with the registry now"
	if o.offline {
		what = "recorded resolutions agree with each other (offline: the registry was not asked)"
	}
	_, err = fmt.Fprintf(stdout, "OK %d tags and %d chart versions in %d records: %s\n", rep.Tags, versions, len(records)+len(charts), what)
	return err
}
