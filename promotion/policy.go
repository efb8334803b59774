package promotion

import (
	"bytes"
	"encoding/json"
	"fmt"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
)

// PolicyFile is the promotion policy's path at the repository root.
const PolicyFile = "throughline-policy.yaml"

// Policy is the repository's promotion policy (PolicyFile), the
// v1alpha1.PromotionPolicy document. Absent, every default is the strict one.
type Policy = v1alpha1.PromotionPolicy

// EnvironmentPolicy is one environment of the policy.
type EnvironmentPolicy = v1alpha1.EnvironmentPolicy

// ParsePolicy reads the policy strictly (unknown fields refused) and checks
// its environment registry (environment.Check).
func ParsePolicy(file string, data []byte) (*Policy, error) {
	js, err := sigyaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("not YAML: %w", err)}
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, &RecordError{File: file, Err: fmt.Errorf("decoding: %w", err)}
	}
	if p.APIVersion != v1alpha1.APIVersion || p.Kind != v1alpha1.PromotionPolicyKind {
		return nil, &RecordError{File: file, Field: "apiVersion/kind",
			Err: fmt.Errorf("%q/%q: want %s/%s", p.APIVersion, p.Kind, v1alpha1.APIVersion, v1alpha1.PromotionPolicyKind)}
	}
	if err := environment.Check(&p); err != nil {
		return nil, &RecordError{File: file, Err: err}
	}
	return &p, nil
}

// Registry is the environment registry of p, read from PolicyFile (the
// empty registry for a nil p). ParsePolicy has checked it.
func Registry(p *Policy) (*environment.Registry, error) {
	return environment.New(PolicyFile, p)
}
