package notifier

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
)

// AcceptanceResource is the Acceptance resource.
var AcceptanceResource = v1alpha1.AcceptanceGVR()

// KubeAcceptances reads Acceptances from the API server, found by their
// throughline.dev/app and throughline.dev/environment labels.
type KubeAcceptances struct {
	Client dynamic.Interface
	// Namespace limits the search ("" is every namespace).
	Namespace string
}

// Get returns the one Acceptance of app in env.
func (k *KubeAcceptances) Get(ctx context.Context, app, env string) (*Live, error) {
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelApp: acceptance.LabelValue(app), v1alpha1.LabelEnvironment: acceptance.LabelValue(env)})
	list, err := k.Client.Resource(AcceptanceResource).Namespace(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing Acceptances %s: %w", sel, err)
	}
	var found []unstructured.Unstructured
	for _, u := range list.Items {
		a, _, _ := unstructured.NestedString(u.Object, "spec", "app")
		e, _, _ := unstructured.NestedString(u.Object, "spec", "environment")
		if a == app && (e == "" || e == env) {
			found = append(found, u)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("Acceptance of %s in %s: %w", app, env, ErrNoAcceptance)
	case 1:
	default:
		return nil, fmt.Errorf("Acceptance of %s in %s: %d objects match %s, want one", app, env, len(found), sel)
	}
	return LiveFrom(&found[0])
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
	return &Live{Namespace: u.GetNamespace(), Name: u.GetName(), Generation: u.GetGeneration(), RenderedHash: hash, Status: st}, nil
}
