package breakglass

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"
)

// EvidenceVersion is the schema version of the break-glass evidence.
const EvidenceVersion = "breakglass-evidence/v1"

// EvidencePath is the evidence of the pause of app in env that began at
// pausedAt: breakglass/<env>/<app>.evidence/<pausedAt>.json beside the
// record (one file per pause; the record is reused by the next one).
func EvidencePath(env, app string, pausedAt time.Time) string {
	return path.Join(Dir, env, app+".evidence", pausedAt.UTC().Format("20060102T150405Z")+".json")
}

// Evidence is the five pieces of evidence of one break-glass pause, written
// by resume in the same commit as the resumed record.
type Evidence struct {
	SchemaVersion string     `json:"schemaVersion"`
	App           string     `json:"app"`
	Environment   string     `json:"environment"`
	Ticket        string     `json:"ticket"`
	Operator      string     `json:"operator"`
	Controller    Controller `json:"controller"`
	// Object is the paused Application / Kustomization.
	Object Ref `json:"object"`
	// BeforePause: 1, the state before the pause.
	BeforePause EvidenceBefore `json:"beforePause"`
	// ManualChange: 2, the live changes found by the write-back, classified.
	ManualChange EvidenceChange `json:"manualChange"`
	// Writeback: 3, the write-back commit (nil: resumed by force without one).
	Writeback *EvidenceWriteback `json:"writeback"`
	// Resume: 4, when and by whom reconciliation was resumed.
	Resume EvidenceResume `json:"resume"`
	// Revocation: 5, the temporary exception revoked: reconciliation
	// restored at a time, and what was seen while watching.
	Revocation EvidenceRevocation `json:"revocation"`
}

// EvidenceBefore is the state before the pause.
type EvidenceBefore struct {
	SourceRevision string `json:"sourceRevision"`
	// ObjectResourceVersion is the Application / Kustomization's.
	ObjectResourceVersion string          `json:"objectResourceVersion"`
	PausedAt              time.Time       `json:"pausedAt"`
	ExpiresAt             time.Time       `json:"expiresAt"`
	Objects               []ObjectVersion `json:"objects"`
}

// ObjectVersion is one managed object's resourceVersion at the pause
// (empty: it did not exist).
type ObjectVersion struct {
	APIVersion      string `json:"apiVersion"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
}

// EvidenceChange is the manual change.
type EvidenceChange struct {
	// WritebackRan says whether writeback compared the states at all; when
	// false, Changes is empty because nobody looked (a forced resume).
	WritebackRan bool     `json:"writebackRan"`
	Changes      []Change `json:"changes"`
}

// EvidenceWriteback is the write-back commit.
type EvidenceWriteback struct {
	Branch      string `json:"branch,omitempty"`
	Commit      string `json:"commit"`
	PullRequest string `json:"pullRequest,omitempty"`
	// MergedInto is the base commit that contains it (empty when forced).
	MergedInto string `json:"mergedInto,omitempty"`
}

// EvidenceResume is the resume.
type EvidenceResume struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Force  bool      `json:"force"`
	Reason string    `json:"reason,omitempty"`
}

// EvidenceRevocation is the end of the temporary exception.
type EvidenceRevocation struct {
	// ReconciliationRestoredAt is when the API server answered the restore
	// with reconciliation on again (Restored says which field).
	ReconciliationRestoredAt time.Time `json:"reconciliationRestoredAt"`
	Restored                 string    `json:"restored"`
	// ObjectResourceVersion is the controller object's after the restore.
	ObjectResourceVersion string `json:"objectResourceVersion"`
	// ObservedFor is how long the managed objects were watched; Flapping
	// those written back and forth meanwhile.
	ObservedFor string   `json:"observedFor"`
	Flapping    []string `json:"flapping"`
	// NoFlapping is true only when the objects were watched (ObservedFor >
	// 0) and none was written back and forth.
	NoFlapping bool `json:"noFlapping"`
}

// Restoration is what Restore read from the API server's answer to its
// patch.
type Restoration struct {
	At              time.Time
	Field           string
	ResourceVersion string
}

// NewEvidence assembles the evidence of a resumed record (State RESUMED,
// Resume set).
func NewEvidence(rec *Record, restored Restoration) *Evidence {
	e := &Evidence{SchemaVersion: EvidenceVersion, App: rec.App, Environment: rec.Environment, Ticket: rec.Ticket, Operator: rec.Operator,
		Controller: rec.Controller, Object: rec.Object,
		BeforePause: EvidenceBefore{SourceRevision: rec.SourceRevision, ObjectResourceVersion: rec.Object.ResourceVersion,
			PausedAt: rec.PausedAt, ExpiresAt: rec.ExpiresAt, Objects: []ObjectVersion{}},
		ManualChange: EvidenceChange{Changes: []Change{}},
		Revocation: EvidenceRevocation{ReconciliationRestoredAt: restored.At.UTC().Truncate(time.Second), Restored: restored.Field,
			ObjectResourceVersion: restored.ResourceVersion, Flapping: []string{}},
	}
	for _, o := range rec.Objects {
		e.BeforePause.Objects = append(e.BeforePause.Objects, ObjectVersion{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace,
			Name: o.Name, ResourceVersion: o.ResourceVersion})
	}
	if wb := rec.Writeback; wb != nil {
		e.ManualChange.WritebackRan = true
		if wb.Classified != nil {
			e.ManualChange.Changes = wb.Classified
		}
		e.Writeback = &EvidenceWriteback{Branch: wb.Branch, Commit: wb.Commit, PullRequest: wb.PR}
	}
	if r := rec.Resume; r != nil {
		e.Resume = EvidenceResume{At: r.At, By: r.By, Force: r.Force, Reason: r.Reason}
		if e.Writeback != nil {
			e.Writeback.MergedInto = r.WritebackMerged
		}
		e.Revocation.ObservedFor = r.ObservedFor
		if e.Revocation.ObservedFor == "" {
			e.Revocation.ObservedFor = "0s"
		}
		if r.Flapping != nil {
			e.Revocation.Flapping = r.Flapping
		}
		d, _ := time.ParseDuration(r.ObservedFor)
		e.Revocation.NoFlapping = d > 0 && len(r.Flapping) == 0
	}
	return e
}

// Validate checks what evidence must hold, and that it is consistent.
func (e *Evidence) Validate() error {
	var errs []error
	req := func(field, v string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", field))
		}
	}
	if e.SchemaVersion != EvidenceVersion {
		errs = append(errs, fmt.Errorf("schemaVersion %q: want %s", e.SchemaVersion, EvidenceVersion))
	}
	req("app", e.App)
	req("environment", e.Environment)
	req("ticket", e.Ticket)
	req("operator", e.Operator)
	req("object.kind", e.Object.Kind)
	req("object.name", e.Object.Name)
	req("resume.by", e.Resume.By)
	req("revocation.restored", e.Revocation.Restored)
	req("revocation.objectResourceVersion", e.Revocation.ObjectResourceVersion)
	if e.Controller != ArgoCD && e.Controller != Flux {
		errs = append(errs, fmt.Errorf("controller %q: want %s or %s", e.Controller, ArgoCD, Flux))
	}
	if e.BeforePause.PausedAt.IsZero() {
		errs = append(errs, errors.New("beforePause.pausedAt is required"))
	}
	if e.Resume.At.Before(e.BeforePause.PausedAt) {
		errs = append(errs, errors.New("resume.at is before beforePause.pausedAt"))
	}
	if e.Revocation.ReconciliationRestoredAt.IsZero() {
		errs = append(errs, errors.New("revocation.reconciliationRestoredAt is required"))
	}
	for i, o := range e.BeforePause.Objects {
		if o.Kind == "" || o.Name == "" || o.APIVersion == "" {
			errs = append(errs, fmt.Errorf("beforePause.objects[%d]: apiVersion, kind and name are required", i))
		}
	}
	for i, c := range e.ManualChange.Changes {
		switch c.Class {
		case Permanent, Temporary, OtherWriter, AlreadyDesired, Conflict, LiveOnly, DeletedLive:
		default:
			errs = append(errs, fmt.Errorf("manualChange.changes[%d].class %q is not a class", i, c.Class))
		}
		if c.Object == "" {
			errs = append(errs, fmt.Errorf("manualChange.changes[%d].object is required", i))
		}
	}
	if len(e.ManualChange.Changes) > 0 && !e.ManualChange.WritebackRan {
		errs = append(errs, errors.New("manualChange.changes without manualChange.writebackRan"))
	}
	switch {
	case e.Resume.Force:
		req("resume.reason (a forced resume)", e.Resume.Reason)
	case e.Writeback == nil:
		errs = append(errs, errors.New("writeback is required unless resume.force"))
	default:
		req("writeback.commit", e.Writeback.Commit)
		req("writeback.mergedInto (a resume that was not forced)", e.Writeback.MergedInto)
	}
	if d, err := time.ParseDuration(e.Revocation.ObservedFor); err != nil {
		errs = append(errs, fmt.Errorf("revocation.observedFor %q: %w", e.Revocation.ObservedFor, err))
	} else if want := d > 0 && len(e.Revocation.Flapping) == 0; e.Revocation.NoFlapping != want {
		errs = append(errs, fmt.Errorf("revocation.noFlapping %t: want %t (observed %s, %d flapping)",
			e.Revocation.NoFlapping, want, d, len(e.Revocation.Flapping)))
	}
	return errors.Join(errs...)
}

// Marshal validates and writes the evidence as indented JSON.
func (e *Evidence) Marshal() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, &RecordError{EvidencePath(e.Environment, e.App, e.BeforePause.PausedAt), err}
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EvidencePath(e.Environment, e.App, e.BeforePause.PausedAt), err)
	}
	return append(b, '\n'), nil
}

// ParseEvidence reads evidence strictly (unknown fields and trailing data
// refused) and validates it.
func ParseEvidence(file string, data []byte) (*Evidence, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e Evidence
	if err := dec.Decode(&e); err != nil {
		return nil, &RecordError{file, err}
	}
	if dec.More() {
		return nil, &RecordError{file, errors.New("trailing data after the evidence object")}
	}
	if err := e.Validate(); err != nil {
		return nil, &RecordError{file, err}
	}
	return &e, nil
}
