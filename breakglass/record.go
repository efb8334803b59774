// Package breakglass is the Git side of suspending the reconciliation of
// exactly one GitOps application for an incident (Argo CD: the
// Application's automated sync policy; Flux: the Kustomization's
// spec.suspend): the pause record with what was live when it began, the
// three-way write-back of the live fix, and the evidence of the resume.
// It needs no Kubernetes client: package breakglass/live pauses, resumes
// and reads the cluster. Objects are handled as unstructured: neither
// Argo CD nor Flux is imported.
package breakglass

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigyaml "sigs.k8s.io/yaml"
)

// SchemaVersion of the pause record.
const SchemaVersion = "breakglass/v1"

// Dir is the folder of the pause records in the GitOps repository.
const Dir = "breakglass"

// Controller is the GitOps controller that reconciles the application.
type Controller string

// The controllers a pause knows.
const (
	ArgoCD Controller = "argocd"
	Flux   Controller = "flux"
)

// State of a pause record.
type State string

// States: a record is PAUSED until it is RESUMED.
const (
	Paused  State = "PAUSED"
	Resumed State = "RESUMED"
)

// Ref names the controller object that was paused.
type Ref struct {
	APIVersion      string `json:"apiVersion"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion"`
}

// LiveObject is one object the application manages, as it was live when
// the pause began.
type LiveObject struct {
	APIVersion      string                      `json:"apiVersion"`
	Kind            string                      `json:"kind"`
	Namespace       string                      `json:"namespace,omitempty"`
	Name            string                      `json:"name"`
	ResourceVersion string                      `json:"resourceVersion,omitempty"` // empty: not found
	ManagedFields   []metav1.ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// Writeback is the branch (and PR) carrying the permanent changes.
type Writeback struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	PR     string `json:"pullRequest,omitempty"`
	// Changes lists every live change found, classified, one line each
	// (only the permanent ones are on the branch); Classified is the same
	// as data, for the evidence of the manual change.
	Changes    []string `json:"changes,omitempty"`
	Classified []Change `json:"classified,omitempty"`
}

// Resume is how the pause ended.
type Resume struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Force  bool      `json:"force,omitempty"`
	Reason string    `json:"reason,omitempty"`
	// WritebackMerged is the commit of the base branch that contains the
	// write-back (empty when forced).
	WritebackMerged string `json:"writebackMerged,omitempty"`
	// ObservedFor is how long the live objects were watched after the
	// resume; Flapping lists those written back and forth meanwhile.
	ObservedFor string   `json:"observedFor,omitempty"`
	Flapping    []string `json:"flapping,omitempty"`
}

// Record is the pause record at breakglass/<env>/<app>.yaml.
type Record struct {
	SchemaVersion  string     `json:"schemaVersion"`
	App            string     `json:"app"`
	Environment    string     `json:"environment"`
	Controller     Controller `json:"controller"`
	Object         Ref        `json:"object"`
	State          State      `json:"state"`
	SourceRevision string     `json:"sourceRevision"`
	// Restore is what the pause changed: Argo CD the removed
	// spec.syncPolicy.automated; Flux false when spec.suspend was set (to
	// false) before the pause, absent when it was not set at all.
	Restore   json.RawMessage `json:"restore,omitempty"`
	Objects   []LiveObject    `json:"objects"`
	Operator  string          `json:"operator"`
	Ticket    string          `json:"ticket"`
	PausedAt  time.Time       `json:"pausedAt"`
	ExpiresAt time.Time       `json:"expiresAt"`
	Writeback *Writeback      `json:"writeback,omitempty"`
	Resume    *Resume         `json:"resume,omitempty"`
}

// Path is the record of app in env.
func Path(env, app string) string { return path.Join(Dir, env, app+".yaml") }

// Active reports whether the record still holds reconciliation paused.
func (r *Record) Active() bool { return r != nil && r.State == Paused }

// Expired reports whether an active pause outlived its expiry at now.
func (r *Record) Expired(now time.Time) bool { return r.Active() && now.After(r.ExpiresAt) }

// Validate checks what a record must hold.
func (r *Record) Validate() error {
	var errs []error
	req := func(field, v string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", field))
		}
	}
	if r.SchemaVersion != SchemaVersion {
		errs = append(errs, fmt.Errorf("schemaVersion %q: want %s", r.SchemaVersion, SchemaVersion))
	}
	req("app", r.App)
	req("environment", r.Environment)
	req("operator", r.Operator)
	req("ticket", r.Ticket)
	req("object.name", r.Object.Name)
	req("object.kind", r.Object.Kind)
	if r.Controller != ArgoCD && r.Controller != Flux {
		errs = append(errs, fmt.Errorf("controller %q: want %s or %s", r.Controller, ArgoCD, Flux))
	}
	if r.State != Paused && r.State != Resumed {
		errs = append(errs, fmt.Errorf("state %q: want %s or %s", r.State, Paused, Resumed))
	}
	if r.State == Resumed && r.Resume == nil {
		errs = append(errs, errors.New("resume is required when state is RESUMED"))
	}
	if r.Resume != nil && r.Resume.Force && r.Resume.Reason == "" {
		errs = append(errs, errors.New("resume.reason is required for a forced resume"))
	}
	if r.PausedAt.IsZero() || r.ExpiresAt.IsZero() || !r.ExpiresAt.After(r.PausedAt) {
		errs = append(errs, errors.New("expiresAt must be after pausedAt"))
	}
	return errors.Join(errs...)
}

// RecordError is a record that does not parse or validate.
type RecordError struct {
	File string
	Err  error
}

func (e *RecordError) Error() string { return fmt.Sprintf("%s: %v", e.File, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// Parse reads a record strictly (unknown fields refused) and validates it.
func Parse(file string, data []byte) (*Record, error) {
	js, err := sigyaml.YAMLToJSON(data)
	if err != nil {
		return nil, &RecordError{file, err}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return nil, &RecordError{file, err}
	}
	if err := r.Validate(); err != nil {
		return nil, &RecordError{file, err}
	}
	return &r, nil
}

// Marshal validates and writes the record as YAML.
func (r *Record) Marshal() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, &RecordError{Path(r.Environment, r.App), err}
	}
	js, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return sigyaml.JSONToYAML(js)
}
