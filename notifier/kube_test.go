package notifier

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
)

// TestKubeAcceptancesLongNames: the notifier selects an Acceptance by the
// label values the render writes, also for names longer than a label value.
func TestKubeAcceptancesLongNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("checkout-service-", 5)[:80]
	env := "production"
	obj := func(name, app string) *unstructured.Unstructured {
		u := health.NewAcceptance()
		u.SetNamespace("shop")
		u.SetName(name)
		// As acceptance.Declare labels it.
		u.SetLabels(map[string]string{
			v1alpha1.LabelManagedBy: "throughline", v1alpha1.LabelApp: acceptance.LabelValue(app), v1alpha1.LabelEnvironment: acceptance.LabelValue(env),
		})
		u.Object["spec"] = map[string]any{"app": app, "environment": env, "renderedHash": "sha256:" + strings.Repeat("a", 64)}
		return u
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{AcceptanceResource: "AcceptanceList"},
		obj("long", long), obj("other", long[:79]+"x"), application("shop"))
	k := &KubeAcceptances{Client: client}
	live, err := k.Get(context.Background(), Event{App: long, Environment: env, Ref: ObjectRef{Kind: KindApplication, Namespace: "argocd", Name: "checkout"}})
	if err != nil {
		t.Fatal(err)
	}
	if live.Name != "long" {
		t.Errorf("found %s/%s", live.Namespace, live.Name)
	}
}
