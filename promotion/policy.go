package promotion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// PolicyFile is the promotion policy's path at the repository root.
const PolicyFile = "throughline-policy.yaml"

// Policy is the repository's promotion policy (PolicyFile), the
// v1alpha1.PromotionPolicy document. Absent, every default is the strict one.
type Policy = v1alpha1.PromotionPolicy

// EnvironmentPolicy is one environment of the policy.
type EnvironmentPolicy = v1alpha1.EnvironmentPolicy

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
	if p.APIVersion != v1alpha1.APIVersion || p.Kind != v1alpha1.PromotionPolicyKind {
		return nil, &RecordError{File: file, Field: "apiVersion/kind",
			Err: fmt.Errorf("%q/%q: want %s/%s", p.APIVersion, p.Kind, v1alpha1.APIVersion, v1alpha1.PromotionPolicyKind)}
	}
	if err := checkReconcileDeadlines(file, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// checkReconcileDeadlines refuses a reconcileDeadline that is zero or
// negative (it would halt every promotion the moment it is reconciled):
// leave it out for no deadline.
func checkReconcileDeadlines(file string, p *Policy) error {
	envs := make([]string, 0, len(p.Environments))
	for env := range p.Environments {
		envs = append(envs, env)
	}
	sort.Strings(envs)
	for _, env := range envs {
		if d := p.Environments[env].ReconcileDeadline; d != nil && d.Duration <= 0 {
			return &RecordError{File: file, Field: "environments." + env + ".reconcileDeadline",
				Err: fmt.Errorf("%s: want a positive duration (e.g. 10m), or none for no deadline", d.Duration)}
		}
	}
	return nil
}
