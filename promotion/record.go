package promotion

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigyaml "sigs.k8s.io/yaml"
)

var printer = message.NewPrinter(language.English)

// SchemaVersion is the only record version this build reads and writes.
const SchemaVersion = "promotion/v1"

// Dir is the folder of the records, relative to the GitOps repository root.
const Dir = "promotion"

// maxRecordSize caps a record file.
const maxRecordSize = 1 << 20

//go:embed schema/promotion-v1.schema.json
var schemaJSON []byte

// SchemaJSON returns the embedded JSON Schema of promotion/v1.
func SchemaJSON() []byte { return append([]byte(nil), schemaJSON...) }

// State is a promotion state.
type State string

// The states.
const (
	Candidate   State = "CANDIDATE"
	Verified    State = "VERIFIED"
	Approved    State = "APPROVED"
	Reconciling State = "RECONCILING"
	Accepted    State = "ACCEPTED"
	Halted      State = "HALTED"
	Rejected    State = "REJECTED"
)

// Record is one promotion/v1 document.
type Record struct {
	SchemaVersion string `json:"schemaVersion"`
	PromotionID   string `json:"promotionId"`
	App           string `json:"app"`
	Attempt       int    `json:"attempt"`
	State         State  `json:"state"`
	// Reason says why the record is HALTED or REJECTED.
	Reason     string      `json:"reason,omitempty"`
	Artifact   Artifact    `json:"artifact"`
	VerifiedIn *VerifiedIn `json:"verifiedIn,omitempty"`
	Target     Target      `json:"target"`
	Approval   *Approval   `json:"approval,omitempty"`
	// Approvals are the signed approvals of an environment with approvers,
	// each written by one commit its approver signed; Approval sums them up
	// once enough distinct approvers signed.
	Approvals []Approval `json:"approvals,omitempty"`
	// Overrides are the signed freeze overrides of the attempt: each
	// written by one commit its approver signed, bound to the attempt's
	// approval inputs, with a reason and a short expiry (override.go).
	// Records written before overrides existed have none.
	Overrides   []Override      `json:"overrides,omitempty"`
	Reconciling *Reconciliation `json:"reconciling,omitempty"`
	Accepted    *Acceptance     `json:"accepted,omitempty"`
	// History lists every state entered, CANDIDATE first; the last is State.
	History []Transition `json:"history"`
}

// Artifact is the identity being promoted.
type Artifact struct {
	// Image is the reference as rendered: name[:tag]@sha256:<hex>.
	Image        string `json:"image"`
	Digest       string `json:"digest"`
	SourceCommit string `json:"sourceCommit"`
	// Evidence is the supply-chain evidence (signatures and attestations,
	// by bundle digest) verified when the artifact became a candidate. It
	// is recorded once, by `promote candidate`, and every later record of
	// the same artifact carries the same reference: gates re-verify these
	// digests, never newer evidence found by tag.
	Evidence *SupplyChain `json:"evidence,omitempty"`
	// Charts are the Helm chart packages the target renders, pinned by
	// digest: promoted together with the image.
	Charts []Chart `json:"charts,omitempty"`
}

// Equal reports whether a and b name the same artifact, evidence and charts.
func (a Artifact) Equal(b Artifact) bool {
	if a.Image != b.Image || a.Digest != b.Digest || a.SourceCommit != b.SourceCommit {
		return false
	}
	if (a.Evidence == nil) != (b.Evidence == nil) || a.Evidence != nil && !a.Evidence.Equal(b.Evidence) {
		return false
	}
	return slices.EqualFunc(a.Charts, b.Charts, func(x, y Chart) bool { return x.Equal(y) })
}

// SupplyChain references the evidence verified at candidacy.
type SupplyChain struct {
	// Candidacy is the promotion id of the CANDIDATE record that verified
	// the evidence first (in Environment).
	Candidacy string `json:"candidacy"`
	// Environment is the first environment, whose trust policy the
	// evidence satisfied at candidacy.
	Environment string `json:"environment"`
	// Items are the verified bundles, by digest.
	Items []EvidenceItem `json:"items"`
	// Manifest is the digest of the evidence manifest (an OCI artifact in
	// the image's repository whose layers embed the items' bundles): a
	// later gate reads every bundle with one request. It decides nothing:
	// each bundle is checked against its item's digest.
	Manifest string `json:"manifest,omitempty"`
}

// Equal reports whether s and o reference the same evidence.
func (s *SupplyChain) Equal(o *SupplyChain) bool {
	return s.Candidacy == o.Candidacy && s.Environment == o.Environment && slices.Equal(s.Items, o.Items) && s.Manifest == o.Manifest
}

// Digests are the bundle digests of s, in order, each once.
func (s *SupplyChain) Digests() []string {
	var out []string
	for _, it := range s.Items {
		if !slices.Contains(out, it.Digest) {
			out = append(out, it.Digest)
		}
	}
	return out
}

// EvidenceItem is one verified signature or attestation bundle.
type EvidenceItem struct {
	// Kind is signature, provenance, sbom or vulnerability-scan.
	Kind string `json:"kind"`
	// Digest is the bundle's digest, sha256:<hex>.
	Digest string `json:"digest"`
	// PredicateType is the attestation's in-toto predicate type (empty
	// for a signature).
	PredicateType string `json:"predicateType,omitempty"`
	// Signer names the trust policy's signer that verified it.
	Signer string `json:"signer,omitempty"`
	// The scan summary of a vulnerability scan, as candidacy read it from
	// the bundle it verified (trust.ReadScan); optional (records written
	// before it have none), sealed by the candidate commit's
	// Evidence-Scan line (gate.SealedInGit). ScanFinished is the scan's
	// metadata.scanFinishedOn (RFC 3339, UTC), WorstSeverity the highest
	// severity of its findings (none, low, medium, high, critical),
	// WorstFindings how many findings have it, Findings how many it lists.
	ScanFinished  string `json:"scanFinished,omitempty"`
	WorstSeverity string `json:"worstSeverity,omitempty"`
	WorstFindings int    `json:"worstFindings,omitempty"`
	Findings      int    `json:"findings,omitempty"`
}

// Scanned reports whether it carries a scan summary.
func (it EvidenceItem) Scanned() bool { return it.ScanFinished != "" }

// Chart is one Helm chart package the target renders.
type Chart struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Digest is the package's digest: the OCI manifest digest, or the
	// sha256 of the .tgz of an HTTP chart repository.
	Digest string `json:"digest"`
	// Source is where the package comes from: oci://host/repo, an HTTP
	// repository's URL, or a path in the repository for a vendored chart.
	Source string `json:"source"`
	// ValuesSchema is the chart's values.schema.json (nil: none).
	ValuesSchema *ValuesSchema `json:"valuesSchema,omitempty"`
}

// Equal reports whether c and o are the same package and values schema.
func (c Chart) Equal(o Chart) bool {
	if c.Name != o.Name || c.Version != o.Version || c.Digest != o.Digest || c.Source != o.Source {
		return false
	}
	return (c.ValuesSchema == nil) == (o.ValuesSchema == nil) && (c.ValuesSchema == nil || *c.ValuesSchema == *o.ValuesSchema)
}

// ValuesSchema identifies a chart's values.schema.json.
type ValuesSchema struct {
	// Digest is the sha256 of the file as packaged.
	Digest string `json:"digest"`
	// ID is the schema's $id, when it has one.
	ID string `json:"id,omitempty"`
	// Version is the schema's version (its "version" keyword), when it
	// has one.
	Version string `json:"version,omitempty"`
}

// VerifiedIn is the evidence of the VERIFIED gate. Of kind
// KindEnvironment (the default, "" in records written before kinds
// existed) it is another environment's acceptance of the artifact; of kind
// KindPriorAcceptance (a rollback) it is the target environment's own
// earlier acceptance of the same digest, named in PriorAcceptance.
type VerifiedIn struct {
	// Kind is KindEnvironment (omitted) or KindPriorAcceptance.
	Kind             VerificationKind `json:"kind,omitempty"`
	Environment      string           `json:"environment"`
	DesiredRevision  string           `json:"desiredRevision,omitempty"`
	ObservedRevision string           `json:"observedRevision,omitempty"`
	RenderedHash     string           `json:"renderedHash,omitempty"`
	RuntimeEvidence  string           `json:"runtimeEvidence,omitempty"`
	// EvidenceCommit is the commit of the base branch whose tree holds
	// RuntimeEvidence and the source record ACCEPTED (the notifier's
	// commit): promote verify read the evidence there.
	EvidenceCommit string `json:"evidenceCommit,omitempty"`
	// PriorAcceptance names the earlier acceptance (kind prior-acceptance
	// only).
	PriorAcceptance *PriorAcceptance `json:"priorAcceptance,omitempty"`
}

// VerificationKind says where the VERIFIED evidence comes from.
type VerificationKind string

// The verification kinds.
const (
	// KindEnvironment: another environment accepted the artifact (a
	// promotion). Records may omit it.
	KindEnvironment VerificationKind = "environment"
	// KindPriorAcceptance: the target environment itself accepted the
	// artifact before (a rollback).
	KindPriorAcceptance VerificationKind = "prior-acceptance"
	// KindCandidacy: the artifact entered the chain here, in a first
	// environment; its supply-chain evidence, recorded at candidacy in
	// this very record and re-verified by promote verify, is the
	// verification. No other environment ran it before.
	KindCandidacy VerificationKind = "candidacy"
	// KindAdoption: the environment ran the artifact when throughline was
	// installed (throughline adopt): the baseline cites no earlier
	// evidence; it is accepted only by the live verification that follows
	// (the notifier's evidence of its RECONCILING desired revision).
	KindAdoption VerificationKind = "adoption"
)

// PriorAcceptance is the claim of a rollback: the attempt PromotionID of
// the same app, environment and digest was ACCEPTED, as the evidence file
// Evidence and the record, both in the tree of Commit, say. The claim is a
// pointer, not proof: the PR gate reads the commit and refuses a claim Git
// does not back.
type PriorAcceptance struct {
	PromotionID string `json:"promotionId"`
	// Evidence is the notifier's evidence file,
	// evidence/<env>/<app>/<promotionId>.json.
	Evidence string `json:"evidence"`
	// Commit holds the evidence file and the record ACCEPTED for PromotionID.
	Commit string `json:"commit"`
}

// EvidenceDir is the folder of the notifier's evidence files (the evidence
// package writes them; its Dir and Path are these).
const EvidenceDir = "evidence"

// PriorEvidencePath is the evidence file of promotionID of app in env.
func PriorEvidencePath(env, app, promotionID string) string {
	return path.Join(EvidenceDir, env, app, promotionID+".json")
}

// IsCandidacy reports whether v is a first environment's verification by
// the evidence recorded at candidacy.
func (v *VerifiedIn) IsCandidacy() bool { return v != nil && v.Kind == KindCandidacy }

// IsCandidacy reports whether r is the record where its artifact became a
// candidate: its evidence names r's own attempt.
func (r *Record) IsCandidacy() bool {
	return r.Artifact.Evidence != nil && r.Artifact.Evidence.Candidacy == r.PromotionID
}

// IsPriorAcceptance reports whether v is a rollback's verification.
func (v *VerifiedIn) IsPriorAcceptance() bool { return v != nil && v.Kind == KindPriorAcceptance }

// IsAdoption reports whether v is an adopted baseline's verification.
func (v *VerifiedIn) IsAdoption() bool { return v != nil && v.Kind == KindAdoption }

// Target is where the artifact goes. Every field is part of the attempt:
// a change makes a new attempt.
type Target struct {
	Environment string `json:"environment"`
	// Path is the target overlay, relative to the repository root.
	Path    string `json:"path"`
	Cluster string `json:"cluster"`
	// RenderedHash is the target rendered with the artifact.
	RenderedHash string `json:"renderedHash"`
	// BaseRenderedHash is the target as it was when proposed: when the
	// target renders differently without this change, it moved on.
	BaseRenderedHash string `json:"baseRenderedHash"`
	// Renderer is throughline's version that rendered the hashes.
	Renderer string `json:"renderer"`
}

// Approval binds an approver to the exact inputs (the APPROVED gate).
type Approval struct {
	Approver   string    `json:"approver"`
	InputHash  string    `json:"inputHash"`
	ExpiresAt  time.Time `json:"expiresAt"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// Reconciliation is the RECONCILING gate: the target's desired commit.
type Reconciliation struct {
	DesiredRevision string `json:"desiredRevision"`
	// DesiredCommit is, for an OCI environment (DesiredRevision a digest),
	// the commit the artifact was built from (promotion/oci.go).
	DesiredCommit string `json:"desiredCommit,omitempty"`
}

// Acceptance is the ACCEPTED gate: the target observed the desired commit
// and the live imageIDs are the artifact.
type Acceptance struct {
	ObservedRevision string `json:"observedRevision"`
	RuntimeEvidence  string `json:"runtimeEvidence"`
}

// Transition is one entry of the history.
type Transition struct {
	State  State     `json:"state"`
	At     time.Time `json:"at"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// nameRE is the schema's $defs/name: what an app or environment may be
// called (it is a path element of the record and the evidence).
var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

// ValidName reports whether s may name an app or an environment.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// RecordPath is the record of app in target environment env.
func RecordPath(app, env string) string { return path.Join(Dir, app, env+".yaml") }

// ErrSchemaVersion is wrapped when a record names another schemaVersion.
var ErrSchemaVersion = errors.New("unsupported schemaVersion")

var (
	compileOnce sync.Once
	compiled    *jsonschema.Schema
	compileErr  error
)

func schema() (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
		if err != nil {
			compileErr = fmt.Errorf("embedded schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		const url = "https://throughline.dev/schemas/promotion-v1.schema.json"
		if err := c.AddResource(url, doc); err != nil {
			compileErr = fmt.Errorf("embedded schema: %w", err)
			return
		}
		compiled, compileErr = c.Compile(url)
	})
	return compiled, compileErr
}

// Parse reads a record (YAML or JSON) strictly: oversized input, a second
// document, an unknown schemaVersion, anything the JSON Schema refuses
// (unknown fields included) and an inconsistent record are refused with a
// *RecordError. file only names the input in errors.
func Parse(file string, data []byte) (*Record, error) {
	if len(data) > maxRecordSize {
		return nil, &RecordError{File: file, Err: fmt.Errorf("%d bytes exceeds the %d byte limit", len(data), maxRecordSize)}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &RecordError{File: file, Err: errors.New("is empty")}
	}
	if bytes.Contains(data, []byte("\n---")) || bytes.HasPrefix(bytes.TrimSpace(data), []byte("---")) {
		return nil, &RecordError{File: file, Err: errors.New("must be exactly one YAML document")}
	}
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("not YAML or JSON: %w", err)}
	}
	if err := validateJSON(file, js); err != nil {
		return nil, err
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("decoding: %w", err)}
	}
	if err := r.Validate(); err != nil {
		return nil, withFile(err, file)
	}
	return &r, nil
}

// validateJSON checks the schemaVersion first (so a future version gets a
// plain message) and then the whole document against the JSON Schema.
func validateJSON(file string, js []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return &RecordError{File: file, Err: fmt.Errorf("decoding: %w", err)}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return &RecordError{File: file, Err: errors.New("must be a mapping")}
	}
	if sv, _ := m["schemaVersion"].(string); sv != SchemaVersion {
		return &RecordError{File: file, Field: "schemaVersion",
			Err: fmt.Errorf("%w %q: this throughline reads %s only", ErrSchemaVersion, m["schemaVersion"], SchemaVersion)}
	}
	sch, err := schema()
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &RecordError{File: file, Err: fmt.Errorf("refused by the promotion/v1 schema: %s", schemaMessage(ve))}
		}
		return &RecordError{File: file, Err: err}
	}
	return nil
}

// schemaMessage flattens a validation error to its leaf causes, one per
// line, each with the JSON pointer of the field.
func schemaMessage(ve *jsonschema.ValidationError) string {
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("%s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(leaves, "; ")
}

func withFile(err error, file string) error {
	var re *RecordError
	if errors.As(err, &re) {
		re.File = file
		return re
	}
	return &RecordError{File: file, Err: err}
}

// Marshal validates the record and encodes it as YAML. A record that the
// schema or Validate refuses is never written.
func (r *Record) Marshal() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	js, err := json.Marshal(r)
	if err != nil {
		return nil, &RecordError{File: RecordPath(r.App, r.Target.Environment), Err: err}
	}
	if err := validateJSON(RecordPath(r.App, r.Target.Environment), js); err != nil {
		return nil, err
	}
	return orderedYAML(js)
}

// orderedYAML encodes JSON as block YAML keeping the key order of the Go
// types (schemaVersion, promotionId, ... history), which reads better in a
// review than sorted keys, and proves the text decodes to the same JSON.
func orderedYAML(js []byte) ([]byte, error) {
	var n kyaml.Node
	if err := kyaml.Unmarshal(js, &n); err != nil {
		return nil, err
	}
	var plain func(*kyaml.Node)
	plain = func(n *kyaml.Node) {
		n.Style = 0
		if n.Kind == kyaml.ScalarNode && n.Tag == "!!str" && !readsAsString(n.Value) {
			n.Style = kyaml.DoubleQuotedStyle
		}
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&n)
	var buf bytes.Buffer
	enc := kyaml.NewEncoder(&buf)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	back, err := sigyaml.YAMLToJSONStrict(buf.Bytes())
	if err != nil {
		return nil, err
	}
	var a, b any
	if json.Unmarshal(js, &a) != nil || json.Unmarshal(back, &b) != nil || !reflect.DeepEqual(a, b) {
		return nil, errors.New("encoding the record as YAML does not round-trip")
	}
	return buf.Bytes(), nil
}

// ReconcileDeadline is when the notifier halts r for not reconciling in
// time, given its environment's reconcileDeadline d: d after r's last
// RECONCILING entry (since). ok is false when d is not positive or no
// entry says when r became RECONCILING. The notifier halts by it and the
// web view shows it: one rule.
func (r *Record) ReconcileDeadline(d time.Duration) (since, at time.Time, ok bool) {
	if d <= 0 {
		return time.Time{}, time.Time{}, false
	}
	for i := len(r.History) - 1; i >= 0; i-- {
		if r.History[i].State == Reconciling {
			return r.History[i].At, r.History[i].At.Add(d), true
		}
	}
	return time.Time{}, time.Time{}, false
}

// readsAsString reports whether v, written as a plain scalar, reads back
// as the string v through the reader of records (Parse: YAML 1.1, as
// Kubernetes reads it). The encoder writes YAML 1.2, which leaves plain
// what 1.1 reads as something else (yes, no, on, off, y, n are booleans
// there): such a string is quoted.
func readsAsString(v string) bool {
	js, err := sigyaml.YAMLToJSON([]byte(v))
	if err != nil {
		return false
	}
	var back any
	if json.Unmarshal(js, &back) != nil {
		return false
	}
	s, ok := back.(string)
	return ok && s == v
}

// evidence says which fields each state needs, and which it must not have
// yet (a later gate's evidence on an earlier state is a skipped state).
var order = map[State]int{Candidate: 0, Verified: 1, Approved: 2, Reconciling: 3, Accepted: 4}

// Validate checks what the schema cannot: the history is a legal chain that
// ends in State, every state's evidence is present and no later gate's
// evidence is, the identity fields agree with each other.
func (r *Record) Validate() error {
	file := RecordPath(r.App, r.Target.Environment)
	fail := func(field, format string, args ...any) error {
		return &RecordError{File: file, Field: field, Err: fmt.Errorf(format, args...)}
	}
	if r.SchemaVersion != SchemaVersion {
		return fail("schemaVersion", "%w %q: this throughline reads %s only", ErrSchemaVersion, r.SchemaVersion, SchemaVersion)
	}
	if !ValidDigest(r.Artifact.Digest) {
		return fail("artifact.digest", "%q is not sha256:<64 lowercase hex>", r.Artifact.Digest)
	}
	if !strings.HasSuffix(r.Artifact.Image, "@"+r.Artifact.Digest) {
		return fail("artifact.image", "%q does not end in @%s", r.Artifact.Image, r.Artifact.Digest)
	}
	if r.Attempt < 1 {
		return fail("attempt", "%d: attempts count from 1", r.Attempt)
	}
	if want := r.Key().ID(); r.PromotionID != want {
		return fail("promotionId", "%q does not match the attempt key (want %q)", r.PromotionID, want)
	}
	if len(r.History) == 0 {
		return fail("history", "is empty: a record starts as CANDIDATE")
	}
	if r.History[0].State != Candidate {
		return fail("history[0].state", "%s: a record starts as CANDIDATE", r.History[0].State)
	}
	for i := 1; i < len(r.History); i++ {
		from, to := r.History[i-1].State, r.History[i].State
		if !CanTransition(from, to) {
			return fail(fmt.Sprintf("history[%d].state", i), "illegal transition %s -> %s", from, to)
		}
		if r.History[i].At.Before(r.History[i-1].At) {
			return fail(fmt.Sprintf("history[%d].at", i), "%s is before the previous entry", r.History[i].At.Format(time.RFC3339))
		}
	}
	last := r.History[len(r.History)-1]
	if last.State != r.State {
		return fail("state", "%s, but the history ends in %s", r.State, last.State)
	}
	// The furthest forward state reached decides which evidence must be present.
	reached := 0
	for _, h := range r.History {
		if o, ok := order[h.State]; ok && o > reached {
			reached = o
		}
	}
	need := []struct {
		level   int
		field   string
		present bool
	}{
		{1, "verifiedIn", r.VerifiedIn != nil},
		{2, "approval", r.Approval != nil},
		{3, "reconciling", r.Reconciling != nil},
		{4, "accepted", r.Accepted != nil},
	}
	for _, n := range need {
		switch {
		case reached >= n.level && !n.present:
			return fail(n.field, "missing: state %s needs it", r.State)
		case reached < n.level && n.present:
			return fail(n.field, "present, but the record never reached the state that records it (a skipped state)")
		}
	}
	if (r.State == Halted || r.State == Rejected) && strings.TrimSpace(r.Reason) == "" {
		return fail("reason", "missing: a %s record says why", r.State)
	}
	if err := r.validateVerifiedIn(fail); err != nil {
		return err
	}
	if err := r.validateRevisions(fail); err != nil {
		return err
	}
	if r.Approval != nil && !r.Approval.ExpiresAt.After(r.Approval.ApprovedAt) {
		return fail("approval.expiresAt", "%s is not after approvedAt", r.Approval.ExpiresAt.Format(time.RFC3339))
	}
	if err := r.validateOverrides(fail); err != nil {
		return err
	}
	return r.validateApprovals(reached, fail)
}

// validateApprovals checks the signed approvals: recorded once VERIFIED,
// one per approver, each bound to this record's inputs with its own
// expiry, and summed up by Approval (every approver, the earliest expiry).
func (r *Record) validateApprovals(reached int, fail func(field, format string, args ...any) error) error {
	if len(r.Approvals) == 0 {
		return nil
	}
	if reached < order[Verified] {
		return fail("approvals", "present, but the record was never VERIFIED (a skipped state)")
	}
	seen := map[string]bool{}
	names := make([]string, 0, len(r.Approvals))
	first := r.Approvals[0].ExpiresAt
	for i, a := range r.Approvals {
		field := fmt.Sprintf("approvals[%d]", i)
		switch {
		case seen[a.Approver]:
			return fail(field+".approver", "%q approves twice: approvals count distinct approvers", a.Approver)
		case !a.ExpiresAt.After(a.ApprovedAt):
			return fail(field+".expiresAt", "%s is not after approvedAt", a.ExpiresAt.Format(time.RFC3339))
		}
		in := r.InputFor(r.Target.Renderer)
		in.ExpiresAt = a.ExpiresAt
		if h := in.Hash(); a.InputHash != h {
			return fail(field+".inputHash", "%s is not this record's approval input (%s)", a.InputHash, h)
		}
		seen[a.Approver] = true
		names = append(names, a.Approver)
		if a.ExpiresAt.Before(first) {
			first = a.ExpiresAt
		}
	}
	if a := r.Approval; a != nil {
		in := r.InputFor(r.Target.Renderer)
		in.ExpiresAt = first
		if a.Approver != strings.Join(names, ", ") || !a.ExpiresAt.Equal(first) || a.InputHash != in.Hash() {
			return fail("approval", "does not sum up approvals: want approver %q, expiresAt %s, inputHash %s",
				strings.Join(names, ", "), first.Format(time.RFC3339), in.Hash())
		}
	}
	return nil
}

// validateVerifiedIn checks the VERIFIED evidence against its kind: another
// environment's, or the target's own earlier acceptance of this very digest
// by an earlier attempt, whose evidence file is where the notifier writes it.
func (r *Record) validateVerifiedIn(fail func(field, format string, args ...any) error) error {
	v := r.VerifiedIn
	if v == nil {
		return nil
	}
	switch v.Kind {
	case "", KindEnvironment:
		if v.PriorAcceptance != nil {
			return fail("verifiedIn.priorAcceptance", "present, but kind is %q: only kind %s names a prior acceptance", v.Kind, KindPriorAcceptance)
		}
		if v.Environment == r.Target.Environment {
			return fail("verifiedIn.environment", "%q is the target environment: evidence must come from another environment (or be kind %s, a rollback)",
				v.Environment, KindPriorAcceptance)
		}
	case KindPriorAcceptance:
		p := v.PriorAcceptance
		if p == nil {
			return fail("verifiedIn.priorAcceptance", "missing: kind %s names the earlier acceptance", KindPriorAcceptance)
		}
		if v.Environment != r.Target.Environment {
			return fail("verifiedIn.environment", "%q: a prior acceptance is the target environment's own (%q)", v.Environment, r.Target.Environment)
		}
		stem := AttemptKey{App: r.App, Digest: r.Artifact.Digest, Environment: r.Target.Environment}.stem()
		n, ok := strings.CutPrefix(p.PromotionID, stem)
		var attempt int
		if _, err := fmt.Sscanf(n, "%d", &attempt); !ok || err != nil || fmt.Sprint(attempt) != n {
			return fail("verifiedIn.priorAcceptance.promotionId", "%q is not an attempt of %s in %s for %s (want %s<attempt>)",
				p.PromotionID, r.App, r.Target.Environment, r.Artifact.Digest, stem)
		}
		if attempt >= r.Attempt {
			return fail("verifiedIn.priorAcceptance.promotionId", "%q is not an earlier attempt than %d", p.PromotionID, r.Attempt)
		}
		if want := PriorEvidencePath(r.Target.Environment, r.App, p.PromotionID); p.Evidence != want {
			return fail("verifiedIn.priorAcceptance.evidence", "%q is not the evidence file of %s (%s)", p.Evidence, p.PromotionID, want)
		}
		if v.RuntimeEvidence != p.Evidence {
			return fail("verifiedIn.runtimeEvidence", "%q is not the prior acceptance's evidence %s", v.RuntimeEvidence, p.Evidence)
		}
		if !ValidRevision(p.Commit) {
			return fail("verifiedIn.priorAcceptance.commit", "%q is not a full commit id", p.Commit)
		}
	case KindCandidacy:
		if v.Environment != r.Target.Environment {
			return fail("verifiedIn.environment", "%q: a candidacy is verified in the target environment itself (%q)", v.Environment, r.Target.Environment)
		}
		if !r.IsCandidacy() {
			return fail("verifiedIn.kind", "%s, but artifact.evidence does not name this attempt as its candidacy: "+
				"only the record where CI's candidate entered the chain is verified by its evidence", KindCandidacy)
		}
		if v.PriorAcceptance != nil || v.DesiredRevision != "" || v.ObservedRevision != "" || v.RenderedHash != "" || v.RuntimeEvidence != "" {
			return fail("verifiedIn", "kind %s cites no environment's runtime evidence: no other environment ran the artifact", KindCandidacy)
		}
	case KindAdoption:
		if v.Environment != r.Target.Environment {
			return fail("verifiedIn.environment", "%q: an adoption is verified in the target environment itself (%q)", v.Environment, r.Target.Environment)
		}
		if r.Attempt != 1 {
			return fail("verifiedIn.kind", "%s on attempt %d: only an environment's first record is its adopted baseline", KindAdoption, r.Attempt)
		}
		if v.PriorAcceptance != nil || v.DesiredRevision != "" || v.ObservedRevision != "" || v.RenderedHash != "" || v.RuntimeEvidence != "" {
			return fail("verifiedIn", "kind %s cites no runtime evidence: the live verification after it is the evidence", KindAdoption)
		}
	default:
		return fail("verifiedIn.kind", "%q: want %s, %s, %s or %s", v.Kind, KindEnvironment, KindPriorAcceptance, KindCandidacy, KindAdoption)
	}
	return nil
}

// ValidDigest reports whether d is sha256:<64 lowercase hex>.
func ValidDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	return ok && len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
}

// ValidRevision reports whether rev is a full Git commit id (SHA-1 or SHA-256).
func ValidRevision(rev string) bool {
	return (len(rev) == 40 || len(rev) == 64) && strings.Trim(rev, "0123456789abcdef") == ""
}
