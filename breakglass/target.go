package breakglass

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/throughline-dev/throughline/environment"
)

// Identities of the controller objects (read as unstructured).
var (
	ApplicationGVK   = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	KustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
)

// Labels and annotations by which a parent restores a child's spec.
const (
	ArgoInstanceLabel    = "argocd.argoproj.io/instance"
	ArgoTrackingIDAnnot  = "argocd.argoproj.io/tracking-id"
	FluxParentNameLabel  = "kustomize.toolkit.fluxcd.io/name"
	AnnotationTicket     = "throughline.dev/breakglass-ticket"
	AnnotationExpiresAt  = "throughline.dev/breakglass-expires-at"
	ApplicationSetKind   = "ApplicationSet"
	FieldManagerThrough  = "throughline-breakglass"
	defaultArgoNamespace = "argocd"
	defaultFluxNamespace = "flux-system"
)

// AnnotationArgoCDRefresh asks Argo CD's application controller for a
// refresh that resolves the target revision again (what argocd-server's
// Refresh sets); Restore sets it.
const AnnotationArgoCDRefresh = "argocd.argoproj.io/refresh"

// RuleController refuses a pause or resume that must not happen, with
// guidance (exitcode.Refusal.Rule).
const RuleController = "breakglass-controller"

// ConflictError is a pause that lost the race to another writer (the
// resourceVersion precondition failed).
type ConflictError struct {
	Object string
	Err    error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s changed since it was read (another operator paused or edited it first): %v", e.Object, e.Err)
}
func (e *ConflictError) Unwrap() error { return e.Err }

// Target is the controller object of one application in one environment.
type Target struct {
	Controller Controller
	Namespace  string // default: argocd / flux-system
	Name       string
}

// GVK is the kind of the controller object.
func (t Target) GVK() schema.GroupVersionKind {
	if t.Controller == Flux {
		return KustomizationGVK
	}
	return ApplicationGVK
}

// ObjectNamespace is the controller object's namespace (Namespace, else
// the controller's default).
func (t Target) ObjectNamespace() string {
	switch {
	case t.Namespace != "":
		return t.Namespace
	case t.Controller == Flux:
		return defaultFluxNamespace
	}
	return defaultArgoNamespace
}

func (t Target) String() string {
	return fmt.Sprintf("%s %s/%s", t.GVK().Kind, t.ObjectNamespace(), t.Name)
}

// Request is what an operator asks to pause.
type Request struct {
	Target    Target
	App, Env  string
	Operator  string
	Ticket    string
	Now       time.Time
	ExpiresAt time.Time
	// Registry, when set, is the environment registry at the base: the
	// target must deploy App in Env by it (CheckTarget). Prefix is the
	// GitOps root inside the repository ("" or ending in "/").
	Registry *environment.Registry
	Prefix   string
}
