package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/drift"

	"github.com/google/go-containerregistry/pkg/name"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// Drift record identity.
const (
	RecordAPIVersion = v1alpha1.APIVersion
	RecordKind       = "TagResolution"
	// maxRecordSize caps a drift record file.
	maxRecordSize = 1 << 20
)

// Record is one resolution of a tag: what the registry said the tag pointed
// to, and when. A promotion carries the digest of a record and never
// resolves the tag again.
type Record struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Reference is the image reference as given (nginx:1.27).
	Reference string `json:"reference"`
	// Repository is the full repository name (index.docker.io/library/nginx).
	Repository string `json:"repository"`
	// Tag is the tag that was resolved.
	Tag string `json:"tag"`
	// Registry is the registry host[:port].
	Registry string `json:"registry"`
	// Digest is what the tag pointed to: sha256:<64 lowercase hex>.
	Digest    string `json:"digest"`
	MediaType string `json:"mediaType,omitempty"`
	// ResolvedAt is when the registry was asked (UTC, RFC 3339).
	ResolvedAt time.Time `json:"resolvedAt"`
}

// NewRecord makes the record of a tag resolution.
func NewRecord(d *Descriptor, at time.Time) (Record, error) {
	if d.Tag == "" {
		return Record{}, invalidf("record", d.Reference, "a drift record needs a tag reference (a digest cannot move)")
	}
	r := Record{
		APIVersion: RecordAPIVersion, Kind: RecordKind,
		Reference: d.Reference, Repository: d.Repository, Tag: d.Tag, Registry: d.Registry,
		Digest: d.Digest, MediaType: d.MediaType, ResolvedAt: at.UTC(),
	}
	return r, r.Validate()
}

// TagKey is repository:tag, the same for every spelling of one tag (nginx,
// docker.io/library/nginx:latest, index.docker.io/library/nginx:latest).
func (r Record) TagKey() string { return r.Repository + ":" + r.Tag }

// Validate checks a record read from a file: it must be internally
// consistent (the reference names the repository and tag it claims).
func (r Record) Validate() error {
	var errs []error
	if r.APIVersion != RecordAPIVersion || r.Kind != RecordKind {
		errs = append(errs, fmt.Errorf("apiVersion/kind %q/%q: want %s/%s", r.APIVersion, r.Kind, RecordAPIVersion, RecordKind))
	}
	t, err := name.NewTag(r.Reference, name.StrictValidation)
	if err != nil {
		// Short names (nginx) are not strict; accept them when they parse.
		t, err = name.NewTag(r.Reference)
	}
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("reference %q is not a tag reference: %w", r.Reference, err))
	case strings.Contains(r.Reference, "@"):
		errs = append(errs, fmt.Errorf("reference %q must be a tag, not a digest", r.Reference))
	case t.Context().Name() != r.Repository:
		errs = append(errs, fmt.Errorf("repository %q does not match reference %q (%s)", r.Repository, r.Reference, t.Context().Name()))
	case t.TagStr() != r.Tag:
		errs = append(errs, fmt.Errorf("tag %q does not match reference %q (%s)", r.Tag, r.Reference, t.TagStr()))
	case t.Context().RegistryStr() != r.Registry:
		errs = append(errs, fmt.Errorf("registry %q does not match reference %q (%s)", r.Registry, r.Reference, t.Context().RegistryStr()))
	}
	if !validDigest(r.Digest) {
		errs = append(errs, fmt.Errorf("digest %q: want sha256:<64 lowercase hex>", r.Digest))
	}
	if r.ResolvedAt.IsZero() {
		errs = append(errs, errors.New("resolvedAt is missing"))
	}
	return errors.Join(errs...)
}

func validDigest(d string) bool {
	alg, h, ok := strings.Cut(d, ":")
	return ok && alg == "sha256" && len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
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

// RecordError is a drift record file that cannot be used.
type RecordError struct {
	File string
	Err  error
}

func (e *RecordError) Error() string { return fmt.Sprintf("drift record %s: %v", e.File, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// ParseRecord reads one record (JSON or YAML) strictly: unknown fields,
// trailing documents, oversized input and inconsistent records are refused.
// file only names the input in errors.
func ParseRecord(file string, data []byte) (Record, error) {
	if len(data) > maxRecordSize {
		return Record{}, &RecordError{file, fmt.Errorf("%d bytes exceeds the %d byte limit", len(data), maxRecordSize)}
	}
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return Record{}, &RecordError{file, errors.New("is empty")}
	}
	js := data
	if t[0] != '{' {
		var err error
		if js, err = sigyaml.YAMLToJSONStrict(data); err != nil {
			return Record{}, &RecordError{file, fmt.Errorf("not JSON or YAML: %w", err)}
		}
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, &RecordError{file, fmt.Errorf("decoding: %w", err)}
	}
	if dec.More() {
		return Record{}, &RecordError{file, errors.New("more than one JSON value")}
	}
	if err := r.Validate(); err != nil {
		return Record{}, &RecordError{file, err}
	}
	return r, nil
}

// SourcedRecord is a record and the file it came from.
type SourcedRecord struct {
	Record
	File string
}

// Drift is a tag seen pointing at more than one digest (drift.Moved of
// kind "tag"): Digests in the order first seen (records by time, then the
// registry now), Seen where each came from.
type Drift = drift.Moved

// DriftReport is the outcome of [CheckDrift].
type DriftReport struct {
	// Tags is how many distinct tags the records name.
	Tags int
	// Drifts are the tags that moved.
	Drifts []Drift
	// Unverifiable are the tags the registry could not be asked about now
	// (unreachable, unauthorized): not decided.
	Unverifiable []error
}

// DigestResolver resolves a tag now; *Client is one.
type DigestResolver interface {
	ResolveDigest(ctx context.Context, ref string) (*Descriptor, error)
}

// CheckDrift compares the recorded resolutions of each tag with each other
// and, when now is not nil, with what the registry says now. A tag that no
// longer exists is a drift too (it resolves to nothing).
func CheckDrift(ctx context.Context, records []SourcedRecord, now DigestResolver) DriftReport {
	rs := make([]drift.Resolution, len(records))
	for i, r := range records {
		rs[i] = drift.Resolution{Key: r.TagKey(), Reference: r.Reference, Digest: r.Digest, At: r.ResolvedAt, Where: r.File}
	}
	var ask drift.Now
	if now != nil {
		ask = func(ctx context.Context, r drift.Resolution) (string, string, error) {
			cur, err := now.ResolveDigest(ctx, r.Reference)
			switch {
			case errors.Is(err, ErrNotFound):
				return drift.Gone, "the registry now (the tag is gone)", nil
			case err != nil:
				return "", "", err
			}
			return cur.Digest, "the registry now", nil
		}
	}
	rep := drift.Check(ctx, "tag", rs, ask)
	return DriftReport{Tags: rep.References, Drifts: rep.Moved, Unverifiable: rep.Unverifiable}
}
