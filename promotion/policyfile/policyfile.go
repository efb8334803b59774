// Package policyfile reads the promotion policy (File, throughline-policy.yaml
// at the repository root) strictly and gives its environment registry. It is
// the part of package promotion the render path needs (the plugin checks
// what an Application claims against the registry), kept apart so that path
// does not link the JSON Schema compiler the promotion records need: package
// promotion re-exports everything here (promotion.ParsePolicy,
// promotion.RecordError, ...). It does not read Git: ReadRoot reads a
// directory, promotion.ReadPolicy a revision.
package policyfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// File is the promotion policy's path at the repository root.
const File = "throughline-policy.yaml"

// RecordError is a promotion record or policy that cannot be used:
// unparseable, refused by the schema, or inconsistent. File names the
// record; Field the offending field when one is known.
type RecordError struct {
	File  string
	Field string
	Err   error
}

func (e *RecordError) Error() string {
	what := "promotion record"
	if path.Base(e.File) == File {
		what = "promotion policy"
	}
	if e.Field != "" {
		return fmt.Sprintf("%s %s: %s: %v", what, e.File, e.Field, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", what, e.File, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// Parse reads the policy strictly (unknown fields refused) and checks its
// environment registry (environment.Check); any failure is a *RecordError
// naming file.
func Parse(file string, data []byte) (*v1alpha1.PromotionPolicy, error) {
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("not YAML: %w", err)}
	}
	var p v1alpha1.PromotionPolicy
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("decoding: %w", err)}
	}
	if p.APIVersion != v1alpha1.APIVersion || p.Kind != v1alpha1.PromotionPolicyKind {
		return nil, &RecordError{File: file, Field: "apiVersion/kind",
			Err: fmt.Errorf("%q/%q: want %s/%s", p.APIVersion, p.Kind, v1alpha1.APIVersion, v1alpha1.PromotionPolicyKind)}
	}
	if m := p.MovedTags; m != "" && m != v1alpha1.MovedTagsRefuse && m != v1alpha1.MovedTagsWarn {
		return nil, &RecordError{File: file, Field: "movedTags", Err: fmt.Errorf("%q: want %s or %s", m, v1alpha1.MovedTagsRefuse, v1alpha1.MovedTagsWarn)}
	}
	if err := environment.Check(&p); err != nil {
		return nil, &RecordError{File: file, Err: err}
	}
	return &p, nil
}

// Registry is the environment registry of p, read from File (the empty
// registry for a nil p). Parse has checked it.
func Registry(p *v1alpha1.PromotionPolicy) (*environment.Registry, error) {
	return environment.New(File, p)
}

// ReadRoot reads the environment registry of File in the directory root (a
// work tree or the repository a plugin is given, not a Git revision),
// through a filesystem confined to root with files capped at maxFileSize:
// the empty registry when there is none. An unreadable or invalid policy is
// invalid input naming the file.
func ReadRoot(root string, maxFileSize int64) (*environment.Registry, error) {
	fsys, err := render.NewConfinedFS(root, maxFileSize, nil)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: err}
	}
	if !fsys.Exists(File) {
		return Registry(nil)
	}
	data, err := fsys.ReadFile(File)
	if err != nil {
		return nil, exitcode.InvalidFile(File, err)
	}
	pol, err := Parse(File, data)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: err}
	}
	return Registry(pol)
}
