package promotion

import (
	"bytes"
	"encoding/json"
	"fmt"

	sigyaml "sigs.k8s.io/yaml"
)

// PolicyFile is the promotion policy's path at the repository root.
const PolicyFile = "throughline-policy.yaml"

// Policy is the repository's promotion policy (PolicyFile). Absent, every
// default is the strict one.
type Policy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Environments names each environment's cluster (the target cluster of
	// the attempt key).
	Environments map[string]EnvironmentPolicy `json:"environments,omitempty"`
	// AllowParameters are top-level keys of the target overlay's
	// kustomization a promotion may change besides the image digest
	// (e.g. "replicas").
	AllowParameters []string `json:"allowParameters,omitempty"`
	// AllowBoundary lets a promotion change boundary fields (namespace,
	// PVC, ResourceQuota, LimitRange, Secret references).
	AllowBoundaryChanges bool `json:"allowBoundary,omitempty"`
	// AllowCrossEnvironment lets the target render name another environment.
	AllowCrossEnvironment bool `json:"allowCrossEnvironment,omitempty"`
}

// EnvironmentPolicy is one environment of the policy.
type EnvironmentPolicy struct {
	Cluster string `json:"cluster,omitempty"`
}

// ParsePolicy reads the policy strictly (unknown fields refused).
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
	if p.APIVersion != "throughline.dev/v1alpha1" || p.Kind != "PromotionPolicy" {
		return nil, &RecordError{File: file, Field: "apiVersion/kind", Err: fmt.Errorf("%q/%q: want throughline.dev/v1alpha1/PromotionPolicy", p.APIVersion, p.Kind)}
	}
	return &p, nil
}

// Cluster is env's cluster: the policy's, else the environment's name.
func (p *Policy) Cluster(env string) string {
	if p != nil {
		if e, ok := p.Environments[env]; ok && e.Cluster != "" {
			return e.Cluster
		}
	}
	return env
}

// Allows reports whether key is an allowed parameter.
func (p *Policy) Allows(key string) bool {
	if p == nil {
		return false
	}
	for _, k := range p.AllowParameters {
		if k == key {
			return true
		}
	}
	return false
}

// AllowBoundary reports whether boundary changes are allowed.
func (p *Policy) AllowBoundary() bool { return p != nil && p.AllowBoundaryChanges }

// AllowCross reports whether cross-environment objects are allowed.
func (p *Policy) AllowCross() bool { return p != nil && p.AllowCrossEnvironment }
