package live

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/throughline-dev/throughline/breakglass"
)

// TestRestoreRefreshesArgoCD: resuming an Argo CD Application asks the
// controller for a refresh in the same patch that gives the automated
// policy back. Without it the real application controller (v2.14, e2e
// argocdcontrol experiment 5) handles "automated sync enabled" with
// CompareWithLatest, which may reuse the revision of main it resolved
// before the write-back was merged: it self-heals the live fix back to the
// old desired state, then syncs the write-back on its next refresh (the
// Deployment written twice, flapping). The refresh annotation makes it
// resolve the branch again before it auto-syncs. Flux gets no such
// annotation.
func TestRestoreRefreshesArgoCD(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ctl  breakglass.Controller
		obj  *unstructured.Unstructured
		want string // the refresh annotation after the resume
	}{
		{"argocd", breakglass.ArgoCD, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "web-production", "namespace": "argocd"},
			"spec": map[string]any{"source": map[string]any{"path": "apps/web/overlays/production"},
				"destination": map[string]any{"namespace": "web-production"},
				"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}}},
		}}, "normal"},
		{"flux", breakglass.Flux, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": "web-production", "namespace": "flux-system"},
			"spec":     map[string]any{"path": "./apps/web/overlays/production", "targetNamespace": "web-production"},
		}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithRuntimeObjects(tc.obj).Build()
			target := breakglass.Target{Controller: tc.ctl, Name: "web-production"}
			rec, err := Pause(ctx, c, breakglass.Request{Target: target, App: "web", Env: "production", Operator: "alice", Ticket: "INC 1",
				Now: time.Now(), ExpiresAt: time.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Restore(ctx, c, rec); err != nil {
				t.Fatal(err)
			}
			u, err := Get(ctx, c, target)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.GetAnnotations()[breakglass.AnnotationArgoCDRefresh]; got != tc.want {
				t.Fatalf("annotation %s = %q after the resume, want %q (annotations %v)", breakglass.AnnotationArgoCDRefresh, got, tc.want, u.GetAnnotations())
			}
			if tc.ctl == breakglass.ArgoCD {
				auto, found, _ := unstructured.NestedMap(u.Object, "spec", "syncPolicy", "automated")
				if !found || auto["selfHeal"] != true || auto["prune"] != true {
					t.Fatalf("automated after the resume: %v (found %t)", auto, found)
				}
			}
		})
	}
}
