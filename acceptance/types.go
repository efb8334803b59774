package acceptance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// Identity of the Acceptance resource.
const (
	Group      = "throughline.dev"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
	Kind       = "Acceptance"
)

// Labels set on every Acceptance.
const (
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	LabelApp         = "throughline.dev/app"
	LabelEnvironment = "throughline.dev/environment"
)

// Acceptance is the declared half of the resource (the verifier owns status).
type Acceptance struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata is the subset of ObjectMeta an Acceptance carries.
type Metadata struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Spec is what the render declared.
type Spec struct {
	App            string             `json:"app"`
	Environment    string             `json:"environment,omitempty"`
	SourceRepoURL  string             `json:"sourceRepoURL,omitempty"`
	SourcePath     string             `json:"sourcePath,omitempty"`
	SourceRevision string             `json:"sourceRevision,omitempty"`
	RenderedHash   string             `json:"renderedHash"`
	ObjectCount    int                `json:"objectCount"`
	Renderer       string             `json:"renderer,omitempty"`
	Exceptions     []policy.Exception `json:"exceptions,omitempty"`
	Workloads      []Workload         `json:"workloads"`
}

// Workload is an object that runs containers.
type Workload struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Namespace  string      `json:"namespace,omitempty"`
	Name       string      `json:"name"`
	Containers []Container `json:"containers"`
}

// Container is one declared container image.
type Container struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Image  string `json:"image"`
	Digest string `json:"digest,omitempty"`
}

// Object returns the Acceptance as a render object (for output).
func (a Acceptance) Object() (render.Object, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return render.Object{}, fmt.Errorf("encoding Acceptance %s: %w", a.Metadata.Name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return render.Object{}, fmt.Errorf("encoding Acceptance %s: %w", a.Metadata.Name, err)
	}
	return render.Object{Map: m}, nil
}

// IsAcceptance reports whether o is a throughline Acceptance (which is never
// part of the rendered hash).
func IsAcceptance(o render.Object) bool {
	id := o.ID()
	return id.Group == Group && id.Kind == Kind
}

// FromObject decodes an Acceptance found in a render.
func FromObject(o render.Object) (Acceptance, error) {
	var a Acceptance
	raw, err := json.Marshal(o.Map)
	if err != nil {
		return a, fmt.Errorf("reading %s: %w", o.ID(), err)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("reading %s: %w", o.ID(), err)
	}
	return a, nil
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// ObjectName turns an application name into a valid object name (DNS-1123
// subdomain).
func ObjectName(app string) string {
	n := invalidNameChars.ReplaceAllString(strings.ToLower(app), "-")
	n = strings.Trim(n, "-.")
	if len(n) > 253 {
		n = strings.Trim(n[:253], "-.")
	}
	if n == "" {
		n = "app"
	}
	return n
}
