package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PromotionPolicy is the repository's promotion policy
// (throughline-policy.yaml). Absent, every default is the strict one; a nil
// *PromotionPolicy answers every question strictly. promotion.ParsePolicy
// decodes and checks it.
type PromotionPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// Environments names each environment's cluster (the target cluster of
	// the attempt key).
	Environments map[string]EnvironmentPolicy `json:"environments,omitempty"`
	// AllowParameters are top-level keys of the target overlay's
	// kustomization a promotion may change besides the image digest
	// (e.g. "replicas").
	AllowParameters []string `json:"allowParameters,omitempty"`
	// AllowBoundaryChanges lets a promotion change boundary fields
	// (namespace, PVC, ResourceQuota, LimitRange, Secret references).
	AllowBoundaryChanges bool `json:"allowBoundary,omitempty"`
	// AllowCrossEnvironment lets the target render name another environment.
	AllowCrossEnvironment bool `json:"allowCrossEnvironment,omitempty"`
}

// EnvironmentPolicy is one environment of the policy.
type EnvironmentPolicy struct {
	Cluster string `json:"cluster,omitempty"`
}

// Cluster is env's cluster: the policy's, else the environment's name.
func (p *PromotionPolicy) Cluster(env string) string {
	if p != nil {
		if e, ok := p.Environments[env]; ok && e.Cluster != "" {
			return e.Cluster
		}
	}
	return env
}

// Allows reports whether key is an allowed parameter.
func (p *PromotionPolicy) Allows(key string) bool {
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
func (p *PromotionPolicy) AllowBoundary() bool { return p != nil && p.AllowBoundaryChanges }

// AllowCross reports whether cross-environment objects are allowed.
func (p *PromotionPolicy) AllowCross() bool { return p != nil && p.AllowCrossEnvironment }
