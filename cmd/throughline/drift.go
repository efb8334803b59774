package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/registry"
)

func newDriftCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "Record tag resolutions and refuse a tag that moved",
		Long: `A tag is a pointer that a registry can move at any time. "drift record" stores
what a tag resolved to and when; "drift check" compares the recorded resolutions
of each tag with each other and with the registry now, and refuses (exit 3) a
tag that resolved to two digests. A promotion carries the recorded digest and
never resolves the tag again.`,
	}
	cmd.AddCommand(newDriftRecordCommand(g, stdout), newDriftCheckCommand(g, stdout))
	return cmd
}

func newDriftRecordCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		rf  registryFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "record IMAGE --out FILE",
		Short: "Resolve a tag and store the resolution (reference, digest, registry, time)",
		Long: `Resolve the tag IMAGE (HEAD, falling back to GET) and write the resolution to
FILE atomically: YAML when FILE ends in .yaml or .yml, else JSON.`,
		Example: `  throughline drift record ghcr.io/throughline-dev/checkout:1.4.2 --out records/staging.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitcode.Usagef("%s needs exactly one IMAGE, got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return exitcode.Usagef("--out FILE is required")
			}
			if strings.Contains(args[0], "@") {
				return exitcode.Usagef("%s is a digest reference: a digest cannot move, record a tag", args[0])
			}
			c, err := rf.client()
			if err != nil {
				return err
			}
			d, err := c.ResolveDigest(cmd.Context(), args[0])
			if err != nil {
				return registryError(err)
			}
			rec, err := registry.NewRecord(d, time.Now())
			if err != nil {
				return registryError(err)
			}
			ext := strings.ToLower(filepath.Ext(out))
			data, err := rec.Marshal(ext == ".yaml" || ext == ".yml")
			if err != nil {
				return fmt.Errorf("encoding drift record: %w", err)
			}
			if err := atomicfile.Write(out, data, 0o644); err != nil {
				return err
			}
			g.log.Info().Str("image", rec.Reference).Str("digest", rec.Digest).Str("file", out).Msg("recorded")
			_, err = fmt.Fprintf(stdout, "recorded tag %s -> %s in %s\n", rec.Reference, rec.Digest, out)
			return err
		},
	}
	rf.add(cmd)
	cmd.Flags().StringVar(&out, "out", "", "file to write the record to (.json, .yaml or .yml)")
	return cmd
}

func newDriftCheckCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		rf      registryFlags
		offline bool
	)
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Refuse a tag whose recorded resolutions disagree with each other or with the registry now",
		Long: `Read the drift records FILE... and, for each tag, compare the recorded digests
with each other and (unless --offline) with what the registry says now.

Exit codes: 0 no tag moved; 3 a tag moved (REJECTED tag <ref> resolved to <d1>
and <d2>) or is gone; 4 a record is unreadable or inconsistent; 5 the registry
could not be asked (not decided: try again).`,
		Example: `  throughline drift check records/staging.json records/production.json
  throughline drift check --offline records/*.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitcode.Usagef("%s needs at least one FILE", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var records []registry.SourcedRecord
			for _, f := range args {
				r, err := readRecord(f)
				if err != nil {
					return err
				}
				records = append(records, registry.SourcedRecord{Record: r, File: f})
			}
			var now registry.DigestResolver
			if !offline {
				c, err := rf.client()
				if err != nil {
					return err
				}
				now = c
			}
			rep := registry.CheckDrift(cmd.Context(), records, now)
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
			if len(lines) > 0 {
				return &exitcode.Refusal{Rule: "moved-tag", Reason: fmt.Sprintf("%d of %d tags moved:\n%s", len(lines), rep.Tags, strings.Join(lines, "\n"))}
			}
			if len(rep.Unverifiable) > 0 {
				return exitcode.NotDecided(errors.Join(rep.Unverifiable...))
			}
			what := "recorded resolutions agree with each other and with the registry now"
			if offline {
				what = "recorded resolutions agree with each other (offline: the registry was not asked)"
			}
			_, err := fmt.Fprintf(stdout, "OK %d tags in %d records: %s\n", rep.Tags, len(records), what)
			return err
		},
	}
	rf.add(cmd)
	cmd.Flags().BoolVar(&offline, "offline", false, "compare the records with each other only; do not ask the registry")
	return cmd
}

// readRecord reads one drift record file (bounded) as untrusted input.
func readRecord(file string) (registry.Record, error) {
	f, err := os.Open(file)
	if err != nil {
		return registry.Record{}, &exitcode.InvalidInput{File: file, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 2<<20))
	if err != nil {
		return registry.Record{}, &exitcode.InvalidInput{File: file, Err: err}
	}
	r, err := registry.ParseRecord(file, data)
	if err != nil {
		return registry.Record{}, &exitcode.InvalidInput{Err: err}
	}
	return r, nil
}
