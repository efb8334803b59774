package acceptance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/render"
)

// wire is the Acceptance's JSON layout as throughline has always written
// it: apiVersion before kind (metav1.TypeMeta puts kind first), then
// metadata, spec and, when set, status.
type wire struct {
	APIVersion string                     `json:"apiVersion"`
	Kind       string                     `json:"kind"`
	Metadata   *metav1.ObjectMeta         `json:"metadata"`
	Spec       *v1alpha1.AcceptanceSpec   `json:"spec"`
	Status     *v1alpha1.AcceptanceStatus `json:"status,omitempty"`
}

// Marshal encodes the Acceptance as JSON in the layout the plugin has always
// printed (apiVersion, kind, metadata, spec; status only when set), so that
// the bytes Argo CD receives do not depend on metav1.TypeMeta's field order.
func Marshal(a *v1alpha1.Acceptance) ([]byte, error) {
	w := wire{APIVersion: a.APIVersion, Kind: a.Kind, Metadata: &a.ObjectMeta, Spec: &a.Spec}
	if !reflect.ValueOf(a.Status).IsZero() {
		w.Status = &a.Status
	}
	raw, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encoding Acceptance %s: %w", a.Name, err)
	}
	return raw, nil
}

// ToObject returns the Acceptance as a render object (for output).
func ToObject(a *v1alpha1.Acceptance) (render.Object, error) {
	raw, err := Marshal(a)
	if err != nil {
		return render.Object{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return render.Object{}, fmt.Errorf("encoding Acceptance %s: %w", a.Name, err)
	}
	return render.Object{Map: m}, nil
}

// IsAcceptance reports whether o is a throughline Acceptance (which is never
// part of the rendered hash).
func IsAcceptance(o render.Object) bool {
	id := o.ID()
	return id.Group == v1alpha1.Group && id.Kind == v1alpha1.AcceptanceKind
}

// FromObject decodes an Acceptance found in a render.
func FromObject(o render.Object) (v1alpha1.Acceptance, error) {
	var a v1alpha1.Acceptance
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

// MaxLabelValue is the longest label value the API server accepts.
const MaxLabelValue = 63

// LabelValue turns an application or environment name into the value of the
// Acceptance's throughline.dev/app and throughline.dev/environment labels:
// ObjectName when it fits in 63 characters, else its first 52 characters
// (without a trailing "-" or ".") then "-" and 10 hex digits of its sha256,
// which is stable and ends alphanumeric. Every reader that selects
// Acceptances by these labels must use it; the spec keeps the full name.
func LabelValue(name string) string {
	n := ObjectName(name)
	if len(n) <= MaxLabelValue {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return strings.TrimRight(n[:52], "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}
