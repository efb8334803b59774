package chartsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/throughline-dev/throughline/drift"
	"time"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// RecordKind is the kind of a chart drift record.
const RecordKind = "ChartResolution"

// maxRecordSize caps a drift record.
const maxRecordSize = 1 << 20

// Record is one resolution of a chart version: what its source said the
// version's digest was, and when.
type Record struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Reference is the chart reference (oci://host/path/name:version).
	Reference  string    `json:"reference"`
	Repo       string    `json:"repo"`
	Name       string    `json:"name"`
	Version    string    `json:"version"`
	Digest     string    `json:"digest"`
	ResolvedAt time.Time `json:"resolvedAt"`
}

// NewRecord makes the record of a resolution.
func NewRecord(r *Resolved, at time.Time) Record {
	return Record{APIVersion: LockAPIVersion, Kind: RecordKind, Reference: r.String(),
		Repo: r.Repo, Name: r.Name, Version: r.Version, Digest: r.Digest, ResolvedAt: at.UTC()}
}

// Ref is the record's chart version.
func (r Record) Ref() Ref { return Ref{Repo: r.Repo, Name: r.Name, Version: r.Version} }

// Validate checks a record read from a file.
func (r Record) Validate() error {
	var errs []error
	if r.APIVersion != LockAPIVersion || r.Kind != RecordKind {
		errs = append(errs, fmt.Errorf("apiVersion/kind %q/%q: want %s/%s", r.APIVersion, r.Kind, LockAPIVersion, RecordKind))
	}
	if err := r.Ref().Validate(); err != nil {
		errs = append(errs, err)
	} else if r.Reference != r.Ref().String() {
		errs = append(errs, fmt.Errorf("reference %q does not match repo, name and version (%s)", r.Reference, r.Ref()))
	}
	if !ValidDigest(r.Digest) {
		errs = append(errs, fmt.Errorf("digest %q: want sha256:<64 lowercase hex>", r.Digest))
	}
	if r.ResolvedAt.IsZero() {
		errs = append(errs, errors.New("resolvedAt is missing"))
	}
	return errors.Join(errs...)
}

// Marshal encodes the record as JSON (indented) or, when yamlOut, YAML.
func (r Record) Marshal(yamlOut bool) ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	if !yamlOut {
		return append(data, '\n'), nil
	}
	return sigyaml.JSONToYAML(data)
}

// IsRecord reports whether data is (or claims to be) a chart drift record:
// its kind is ChartResolution.
func IsRecord(data []byte) bool {
	var probe struct {
		Kind string `json:"kind"`
	}
	js, err := sigyaml.YAMLToJSON(data)
	return err == nil && json.Unmarshal(js, &probe) == nil && probe.Kind == RecordKind
}

// ParseRecord reads one chart record (JSON or YAML) strictly.
func ParseRecord(file string, data []byte) (Record, error) {
	if len(data) > maxRecordSize {
		return Record{}, fmt.Errorf("chart drift record %s: %d bytes exceeds the %d byte limit", file, len(data), maxRecordSize)
	}
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return Record{}, fmt.Errorf("chart drift record %s: not JSON or YAML: %w", file, err)
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("chart drift record %s: decoding: %w", file, err)
	}
	if err := r.Validate(); err != nil {
		return Record{}, fmt.Errorf("chart drift record %s: %w", file, err)
	}
	return r, nil
}

// SourcedRecord is a record and the file it came from.
type SourcedRecord struct {
	Record
	File string
}

// Drift is a chart version seen with more than one digest (drift.Moved of
// kind "chart").
type Drift = drift.Moved

// DriftReport is the outcome of [CheckDrift].
type DriftReport struct {
	Versions     int
	Drifts       []Drift
	Unverifiable []error
}

// Resolver resolves a chart version now; *Fetcher is one.
type Resolver interface {
	Resolve(ctx context.Context, ref Ref) (*Resolved, error)
}

// CheckDrift compares the recorded resolutions of each chart version with
// each other and, when now is not nil, with what the source says now. A
// version whose package changed is a drift naming both digests; a source
// that cannot answer makes the version unverifiable (not decided).
func CheckDrift(ctx context.Context, records []SourcedRecord, now Resolver) DriftReport {
	rs := make([]drift.Resolution, len(records))
	refs := map[string]Ref{}
	for i, r := range records {
		k := r.Ref().String()
		refs[k] = r.Ref()
		rs[i] = drift.Resolution{Key: k, Reference: k, Digest: r.Digest, At: r.ResolvedAt, Where: r.File}
	}
	var ask drift.Now
	if now != nil {
		ask = func(ctx context.Context, r drift.Resolution) (string, string, error) {
			cur, err := now.Resolve(ctx, refs[r.Key])
			switch c := exitcode.Code(err); {
			case err == nil:
				return cur.Digest, "the source now", nil
			case c == exitcode.Refused || c == exitcode.Invalid:
				// The source no longer serves the version, or serves a
				// package its own index disowns: it changed.
				return drift.Gone, "the source now (" + err.Error() + ")", nil
			}
			return "", "", err
		}
	}
	rep := drift.Check(ctx, "chart", rs, ask)
	return DriftReport{Versions: rep.References, Drifts: rep.Moved, Unverifiable: rep.Unverifiable}
}
