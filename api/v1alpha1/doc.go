// Package v1alpha1 is the throughline.dev/v1alpha1 API: the Go types of the
// documents throughline reads and writes under the group throughline.dev,
// version v1alpha1.
//
//   - Acceptance: the custom resource a render declares (spec: the app, the
//     environment, the source path, the rendered hash and every
//     container's declared image and digest) and the verifier reports on
//     (status: the Ready, Reconciling and Stalled conditions and the imageIDs
//     observed per container). Its CustomResourceDefinition is
//     deploy/crds/throughline.dev_acceptances.yaml; a test holds the two
//     together.
//   - AllowList: the repository's throughline-allowlist.yaml, the only
//     source of exceptions to the pin rule.
//   - PromotionPolicy: the repository's throughline-policy.yaml.
//
// The package is a leaf: it imports the standard library and
// k8s.io/apimachinery's meta/v1 and runtime packages only, so that any
// client can use the types without pulling in throughline (a test enforces
// it). Parsing and validation live with their users (policy.ParseAllowList,
// promotion.ParsePolicy, acceptance.FromObject).
//
// +kubebuilder:object:generate=true
// +groupName=throughline.dev
package v1alpha1
