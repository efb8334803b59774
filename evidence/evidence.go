// Package evidence is the acceptance evidence of a promotion: the record
// the notifier writes when a GitOps controller reports a sync, and its
// sinks: a commit of evidence/<env>/<app>/<promotionId>.json together with
// the promotion record's new state (compare-and-swap push, never forced),
// and a commit status on the desired commit.
package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/throughline-dev/throughline/promotion"
)

// SchemaVersion of the evidence record.
const SchemaVersion = "evidence/v1"

// Dir is the folder of the evidence files, relative to the GitOps root.
// The layout is promotion's, which names these files in rollback records.
const Dir = promotion.EvidenceDir

// Path is the evidence file of a promotion.
func Path(env, app, promotionID string) string {
	return promotion.PriorEvidencePath(env, app, promotionID)
}

// Record is one evidence file.
type Record struct {
	SchemaVersion string `json:"schemaVersion"`
	App           string `json:"app"`
	Environment   string `json:"environment"`
	PromotionID   string `json:"promotionId"`
	// Decision is ACCEPTED or HALTED.
	Decision promotion.State `json:"decision"`
	// Reason says why a HALTED decision was taken, or why a later commit
	// than the desired one counts for an ACCEPTED one.
	Reason string `json:"reason,omitempty"`
	// Class is the failure class of a HALTED decision: source, render, live
	// or runtime (a runtime check failed, ClassRuntime).
	Class          string `json:"class,omitempty"`
	Image          string `json:"image"`
	ArtifactDigest string `json:"artifactDigest"`
	// DesiredRevision and ObservedRevision are commit ids, or in an OCI
	// environment manifest digests (sha256:<hex>, evidence/oci.go).
	DesiredRevision  string `json:"desiredRevision"`
	ObservedRevision string `json:"observedRevision"`
	// DesiredCommit is, in an OCI environment, the commit the desired
	// artifact was built from (the record's reconciling.desiredCommit);
	// ObservedCommit the commit the observed artifact's revision
	// annotation names, as the controller reported it (Flux's
	// originRevision), when it did.
	DesiredCommit  string `json:"desiredCommit,omitempty"`
	ObservedCommit string `json:"observedCommit,omitempty"`
	// RenderedHash is the rendered hash the Acceptance declares (and the
	// verifier saw); DesiredRenderedHash the one the record proposed.
	RenderedHash        string `json:"renderedHash,omitempty"`
	DesiredRenderedHash string `json:"desiredRenderedHash,omitempty"`
	// Overrides are the signed freeze overrides the promotion record
	// carried when the notifier decided (promote approve
	// --override-freeze): the evidence says that the deployment went
	// through a freeze or outside the windows, who lifted it, why and
	// until when.
	Overrides []promotion.Override `json:"overrides,omitempty"`
	// Acceptance names the Acceptance object read (namespace/name).
	Acceptance string `json:"acceptance,omitempty"`
	// VerifiedAt is the verifier's verifiedAt.
	VerifiedAt *time.Time `json:"verifiedAt,omitempty"`
	// SoakStartedAt is when the images were verified and the soak of the
	// runtime checks began; Soak its declared length (a Go duration), the
	// Acceptance's spec.checks.soak. VerifiedAt at least Soak after
	// SoakStartedAt is a completed soak.
	SoakStartedAt *time.Time `json:"soakStartedAt,omitempty"`
	Soak          string     `json:"soak,omitempty"`
	// Checks are the runtime checks the Acceptance declared, each with its
	// last evaluation (evidence.Checks).
	Checks     []Check   `json:"checks,omitempty"`
	Pods       []Pod     `json:"pods,omitempty"`
	ReportedBy Reporter  `json:"reportedBy"`
	Time       time.Time `json:"time"`
	// SummaryNote is not written: a note on the commit status of an
	// ACCEPTED decision (a summary not published).
	SummaryNote string `json:"-"`
}

// Summary is where the signed SLSA verification summary of an ACCEPTED
// decision is (package vsa publishes it next to the image). The notifier
// records it after the acceptance commit (the summary names that commit),
// in a file of its own beside the evidence (SummaryPath): the evidence file
// never changes after the acceptance, which every gate checks.
type Summary struct {
	// Statement is the sha256:<hex> of its in-toto statement.
	Statement string `json:"statement"`
	// Bundle is the digest of its Sigstore bundle, Manifest the digest of
	// the OCI referrer of the image that holds it.
	Bundle   string `json:"bundle"`
	Manifest string `json:"manifest"`
	// AcceptanceCommit is the commit it names.
	AcceptanceCommit string `json:"acceptanceCommit"`
}

// Pod is one observed imageID of a declared container.
type Pod struct {
	Workload  string `json:"workload"`
	Container string `json:"container"`
	Pod       string `json:"pod"`
	Pods      int    `json:"pods"`
	Declared  string `json:"declared"`
	ImageID   string `json:"imageID"`
	Outcome   string `json:"outcome"`
	Match     string `json:"match,omitempty"`
	Platform  string `json:"platform,omitempty"`
}

// Reporter is the controller whose event led to the decision.
type Reporter struct {
	// Source is argocd or flux.
	Source string `json:"source"`
	// Controller is the reporting controller (Flux's reportingController,
	// Argo CD's notifications controller), Instance its instance.
	Controller string `json:"controller,omitempty"`
	Instance   string `json:"instance,omitempty"`
	// Object is the reporting object: Argo CD Application or Flux kind/namespace/name.
	Object string `json:"object,omitempty"`
	// Reason is the event's reason or trigger.
	Reason string `json:"reason,omitempty"`
}

// FieldError is a record Validate refuses: File is its path, Field the
// field that is wrong.
type FieldError struct {
	File, Field, Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("evidence %s: %s: %s", e.File, e.Field, e.Reason)
}

// Validate checks the fields every evidence record has; a refusal is a
// *FieldError.
func (r *Record) Validate() error {
	fail := func(field, format string, args ...any) error {
		return &FieldError{File: Path(r.Environment, r.App, r.PromotionID), Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.SchemaVersion != SchemaVersion:
		return fail("schemaVersion", "%q, want %s", r.SchemaVersion, SchemaVersion)
	case r.App == "" || r.Environment == "" || r.PromotionID == "":
		return fail("app/environment/promotionId", "missing")
	case r.Decision != promotion.Accepted && r.Decision != promotion.Halted:
		return fail("decision", "%q, want ACCEPTED or HALTED", r.Decision)
	case r.Decision == promotion.Halted && r.Reason == "":
		return fail("reason", "missing: a HALTED decision says why")
	case !promotion.ValidDigest(r.ArtifactDigest):
		return fail("artifactDigest", "%q is not sha256:<hex>", r.ArtifactDigest)
	case r.Decision == promotion.Accepted && r.ObservedRevision != r.DesiredRevision && !promotion.ValidOCIRevision(r.DesiredRevision) &&
		(r.Reason == "" || r.RenderedHash == "" || r.RenderedHash != r.DesiredRenderedHash):
		return fail("observedRevision", "%q is not the desired %s: ACCEPTED only for a later commit that renders the approved objects "+
			"(renderedHash %q, desired %q) and says so in reason", r.ObservedRevision, r.DesiredRevision, r.RenderedHash, r.DesiredRenderedHash)
	case r.Time.IsZero():
		return fail("time", "missing")
	}
	if field, err := r.validateRevisions(); err != nil {
		return fail(field, "%v", err)
	}
	if err := r.validateChecks(); err != nil {
		return fail("checks", "%v", err)
	}
	return nil
}

// Marshal validates and encodes the record as indented JSON.
func (r *Record) Marshal() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("evidence %s: %w", Path(r.Environment, r.App, r.PromotionID), err)
	}
	return buf.Bytes(), nil
}

// Parse decodes an evidence file strictly.
func Parse(file string, data []byte) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("evidence %s: %w", file, err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// ErrUnknownApp is wrapped when no promotion record exists for the app and
// environment.
var ErrUnknownApp = errors.New("no promotion record for this app and environment")

// ErrDuplicate is wrapped when the same evidence is already in Git (a
// repeated delivery, or another replica wrote it first).
var ErrDuplicate = errors.New("the evidence is already recorded")

// ErrNotApplicable is wrapped when the record is in no state this event can
// advance: not RECONCILING yet, or decided otherwise already.
var ErrNotApplicable = errors.New("the promotion record is not waiting for this evidence")
