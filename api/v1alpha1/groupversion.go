package v1alpha1

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object paths=.

import "k8s.io/apimachinery/pkg/runtime/schema"

// Group and Version of every kind in this package.
const (
	Group   = "throughline.dev"
	Version = "v1alpha1"
	// APIVersion is the apiVersion field of every kind in this package.
	APIVersion = Group + "/" + Version
)

// Kinds of this package, and the Acceptance resource.
const (
	AcceptanceKind      = "Acceptance"
	AcceptanceListKind  = "AcceptanceList"
	AcceptanceResource  = "acceptances"
	AllowListKind       = "AllowList"
	PromotionPolicyKind = "PromotionPolicy"
)

// GroupVersion is throughline.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// AcceptanceGVK returns the GroupVersionKind of the Acceptance.
func AcceptanceGVK() schema.GroupVersionKind { return GroupVersion.WithKind(AcceptanceKind) }

// AcceptanceListGVK returns the GroupVersionKind of a list of Acceptances.
func AcceptanceListGVK() schema.GroupVersionKind { return GroupVersion.WithKind(AcceptanceListKind) }

// AcceptanceGVR returns the GroupVersionResource of the Acceptance.
func AcceptanceGVR() schema.GroupVersionResource {
	return GroupVersion.WithResource(AcceptanceResource)
}

// AllowListGVK returns the GroupVersionKind of the allow-list document.
func AllowListGVK() schema.GroupVersionKind { return GroupVersion.WithKind(AllowListKind) }

// PromotionPolicyGVK returns the GroupVersionKind of the promotion policy
// document.
func PromotionPolicyGVK() schema.GroupVersionKind { return GroupVersion.WithKind(PromotionPolicyKind) }
