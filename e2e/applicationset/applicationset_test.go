//go:build e2e

package applicationset

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// appSet generates production's Applications of two apps, its template
// using parameters in names, paths, namespaces and plugin parameters, and
// one parameter no element sets (left as it is by both).
const appSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: production
  namespace: argocd
spec:
  generators:
    - list:
        elements:
          - {app: checkout, tier: "1"}
          - {app: storefront, tier: "2"}
  template:
    metadata:
      name: '{{app}}-production'
      labels: {tier: 't{{ tier }}'}
    spec:
      project: production
      source:
        repoURL: https://git.example.test/platform/gitops-env.git
        targetRevision: main
        path: 'apps/{{app}}/overlays/production'
        plugin:
          name: throughline-v1
          parameters:
            - {name: environment, string: production}
            - {name: app, string: '{{app}}'}
            - {name: unset, string: '{{nobody}}'}
      destination:
        server: https://kubernetes.default.svc
        namespace: '{{app}}-production'
`

// TestExpansionIsTheControllers: every Application Argo CD's ApplicationSet
// controller generates is one gate.ApplicationSetApplications expands,
// metadata.name, labels and spec equal, and no other.
func TestExpansionIsTheControllers(t *testing.T) {
	testenv.RequireArgoCDApplicationSetController(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	testenv.StartArgoCDApplicationSetController(t, api)
	t.Logf("real components: kube-apiserver v%s, argocd-applicationset-controller", testenv.K8sVersion)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := api.Client
	must(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}})))
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "production", "namespace": "argocd"},
		"spec": map[string]any{"sourceRepos": []any{"https://git.example.test/platform/gitops-env.git"},
			"destinations": []any{map[string]any{"server": "https://kubernetes.default.svc", "namespace": "*-production"}}},
	}}))
	set := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal([]byte(appSet), &set.Object))
	want, err := gate.ApplicationSetApplications(set.Object, nil, nil)
	must(t, err)
	if len(want) != 2 {
		t.Fatalf("gate expands %d Applications, want 2", len(want))
	}
	must(t, c.Create(ctx, set))

	for _, w := range want {
		meta := w["metadata"].(map[string]any)
		name := meta["name"].(string)
		var got *unstructured.Unstructured
		deadline := time.Now().Add(time.Minute)
		for got == nil {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("argoproj.io/v1alpha1")
			u.SetKind("Application")
			if err := c.Get(ctx, client.ObjectKey{Namespace: "argocd", Name: name}, u); err == nil {
				got = u
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the controller did not generate Application argocd/%s (gate expands it) within a minute", name)
			}
			time.Sleep(250 * time.Millisecond)
		}
		gotSpec, _, _ := unstructured.NestedMap(got.Object, "spec")
		if !reflect.DeepEqual(normal(t, gotSpec), normal(t, w["spec"])) {
			t.Errorf("Application %s: the controller's spec\n%s\ngate's\n%s", name, js(t, gotSpec), js(t, w["spec"]))
		}
		if labels := got.GetLabels(); labels["tier"] != meta["labels"].(map[string]any)["tier"] {
			t.Errorf("Application %s: the controller's labels %v, gate's %v", name, labels, meta["labels"])
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("argoproj.io/v1alpha1")
	list.SetKind("ApplicationList")
	must(t, c.List(ctx, list, client.InNamespace("argocd")))
	if len(list.Items) != len(want) {
		t.Fatalf("the controller generated %d Applications, gate expands %d", len(list.Items), len(want))
	}
}

// normal is v through JSON (the API server's numbers and empty values).
func normal(t *testing.T, v any) any {
	t.Helper()
	var out any
	must(t, json.Unmarshal([]byte(js(t, v)), &out))
	return out
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
