package notifier

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
)

// AcceptanceResource is the Acceptance resource.
var AcceptanceResource = v1alpha1.AcceptanceGVR()

// The controller objects that bind an app to the namespace its Acceptance
// is read from.
var (
	// ApplicationResource is Argo CD's Application (spec.destination.namespace).
	ApplicationResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	// KustomizationResource is Flux's Kustomization (spec.targetNamespace,
	// else the namespaces of the Acceptances in its status.inventory).
	KustomizationResource = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// Controller object kinds (Event.Ref.Kind).
const (
	KindApplication   = "Application"
	KindKustomization = "Kustomization"
)

// KubeAcceptances reads Acceptances from the API server: only in the
// namespace the delivery's controller object binds the app to, found there
// by their throughline.dev/app and throughline.dev/environment labels.
type KubeAcceptances struct {
	Client dynamic.Interface
	// Namespace, when set, is the only namespace a controller object may
	// bind (another one is refused with ErrUnbound).
	Namespace string
	// Registry, when set, is the environment registry the controller
	// object must agree with: its source paths the delivery's app in its
	// environment, its namespaces that environment's (checkEnvironment).
	Registry RegistryFunc
	// Prefix is the GitOps root inside the repository the controller
	// objects read ("" or ending in "/").
	Prefix string
}

// Get returns the one Acceptance of ev's app in ev's environment, read only
// in the namespaces ev.Ref binds (see Bind). None is ErrNoAcceptance, more
// than one ErrAmbiguous: never the first of several.
func (k *KubeAcceptances) Get(ctx context.Context, ev Event) (*Live, error) {
	u, nss, err := k.bind(ctx, ev.Ref)
	if err != nil {
		return nil, err
	}
	if k.Registry != nil {
		reg, err := k.Registry(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkEnvironment(reg, ev, u, nss, k.Prefix); err != nil {
			return nil, err
		}
	}
	app, env := ev.App, ev.Environment
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelApp: acceptance.LabelValue(app), v1alpha1.LabelEnvironment: acceptance.LabelValue(env)})
	var found []unstructured.Unstructured
	for _, ns := range nss {
		list, err := k.Client.Resource(AcceptanceResource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, fmt.Errorf("listing Acceptances %s in namespace %s: %w", sel, ns, err)
		}
		for _, u := range list.Items {
			a, _, _ := unstructured.NestedString(u.Object, "spec", "app")
			e, _, _ := unstructured.NestedString(u.Object, "spec", "environment")
			if a == app && (e == "" || e == env) {
				found = append(found, u)
			}
		}
	}
	where := "namespace " + strings.Join(nss, ", ")
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("Acceptance of %s in %s: %w in %s (bound by %s)", app, env, ErrNoAcceptance, where, ev.Ref)
	case 1:
		return LiveFrom(&found[0])
	}
	names := make([]string, len(found))
	for i := range found {
		names[i] = found[i].GetNamespace() + "/" + found[i].GetName()
	}
	return nil, fmt.Errorf("Acceptance of %s in %s: %w: %s match in %s (bound by %s), want one",
		app, env, ErrAmbiguous, strings.Join(names, ", "), where, ev.Ref)
}

// Bind returns the namespaces the controller object ref deploys the app's
// Acceptance to, read from the live object (never from the delivery):
//   - an Argo CD Application: spec.destination.namespace, the namespace
//     Argo CD gives every namespaced object of the render that has none
//     (the render puts the Acceptance in its workloads' namespace, or none);
//     an Application without one is ErrUnbound;
//   - a Flux Kustomization: spec.targetNamespace, which kustomize-controller
//     sets on every namespaced object it applies, overriding theirs; without
//     it, the namespaces of the throughline.dev Acceptances its
//     status.inventory lists (what it applied, each keeping the namespace it
//     was committed with); none there yet is a *WaitError.
//
// A missing controller object is a *WaitError; any other kind, or a ref
// without a namespace or name, is ErrUnbound.
func (k *KubeAcceptances) Bind(ctx context.Context, ref ObjectRef) ([]string, error) {
	_, nss, err := k.bind(ctx, ref)
	return nss, err
}

// bind is Bind that also returns the controller object.
func (k *KubeAcceptances) bind(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, []string, error) {
	if ref.Namespace == "" || ref.Name == "" {
		return nil, nil, fmt.Errorf("%s: %w: the delivery names no namespace or no name", ref, ErrUnbound)
	}
	var gvr schema.GroupVersionResource
	switch ref.Kind {
	case KindApplication:
		gvr = ApplicationResource
	case KindKustomization:
		gvr = KustomizationResource
	default:
		return nil, nil, fmt.Errorf("%s: %w: only an Argo CD Application or a Flux Kustomization binds an app to a namespace", ref, ErrUnbound)
	}
	u, err := k.Client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, &WaitError{Reason: fmt.Sprintf("%s not found: it binds the namespace of the Acceptance", ref)}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	var nss []string
	if ref.Kind == KindApplication {
		ns, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "namespace")
		if ns == "" {
			return nil, nil, fmt.Errorf("%s: %w: it has no spec.destination.namespace", ref, ErrUnbound)
		}
		nss = []string{ns}
	} else if ns, _, _ := unstructured.NestedString(u.Object, "spec", "targetNamespace"); ns != "" {
		nss = []string{ns}
	} else if nss = inventoryAcceptanceNamespaces(u); len(nss) == 0 {
		return nil, nil, &WaitError{Reason: fmt.Sprintf("%s has no spec.targetNamespace and no Acceptance in its status.inventory yet", ref)}
	}
	for _, ns := range nss {
		if k.Namespace != "" && ns != k.Namespace {
			return nil, nil, fmt.Errorf("%s: %w: it binds namespace %s, the notifier reads Acceptances in %s only", ref, ErrUnbound, ns, k.Namespace)
		}
	}
	return u, nss, nil
}

// inventoryAcceptanceNamespaces returns the namespaces of the Acceptances
// in a Kustomization's status.inventory (entry IDs are
// <namespace>_<name>_<group>_<kind>), sorted, without duplicates.
func inventoryAcceptanceNamespaces(u *unstructured.Unstructured) []string {
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
	var nss []string
	for _, e := range entries {
		m, _ := e.(map[string]any)
		id, _ := m["id"].(string)
		f := strings.Split(id, "_")
		if len(f) == 4 && f[0] != "" && f[2] == v1alpha1.Group && f[3] == v1alpha1.AcceptanceKind && !slices.Contains(nss, f[0]) {
			nss = append(nss, f[0])
		}
	}
	slices.Sort(nss)
	return nss
}

// LiveFrom reads what the notifier decides on from an Acceptance: its
// generation, spec.renderedHash and status. A status that does not decode is
// an error (the delivery is retried).
func LiveFrom(u *unstructured.Unstructured) (*Live, error) {
	st, err := health.ReadStatus(u)
	if err != nil {
		return nil, err
	}
	hash, _, _ := unstructured.NestedString(u.Object, "spec", "renderedHash")
	checks, err := specChecks(u)
	if err != nil {
		return nil, err
	}
	return &Live{Namespace: u.GetNamespace(), Name: u.GetName(), Generation: u.GetGeneration(), RenderedHash: hash, Status: st, Checks: checks}, nil
}
