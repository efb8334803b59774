package live

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
)

// These tests use controller-runtime's fake client: a refused pause is
// decided before any request that needs a real API server's semantics
// (e2e/breakglass pauses and resumes through a real kube-apiserver).

const webRegistry = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  staging:
    paths: ["apps/*/overlays/staging"]
    namespaces: ["*-staging"]
  production:
    paths: ["apps/*/overlays/production"]
    namespaces: ["*-production"]
`

// wantEnvRefusal fails unless err is an environment refusal (exit 3)
// naming the registry and saying text.
func wantEnvRefusal(t *testing.T, err error, text string) {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused ||
		(re.Rule != environment.RuleMismatch && re.Rule != environment.RuleUnknown) {
		t.Fatalf("want an environment refusal (exit 3), got exit %d: %v", exitcode.Code(err), err)
	}
	if !strings.Contains(err.Error(), text) || !strings.Contains(err.Error(), promotion.PolicyFile) {
		t.Errorf("refusal %q does not say %q and name %s", err, text, promotion.PolicyFile)
	}
}

// TestPauseEnvironmentIdentity: pause refuses a controller object that
// does not deploy the app in the environment named (before anything is
// patched), by the registry.
func TestPauseEnvironmentIdentity(t *testing.T) {
	ctx := context.Background()
	pol, err := promotion.ParsePolicy(promotion.PolicyFile, []byte(webRegistry))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := promotion.Registry(pol)
	if err != nil {
		t.Fatal(err)
	}
	app := func(p, ns string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "web-production", "namespace": "argocd"},
			"spec": map[string]any{"source": map[string]any{"path": p}, "destination": map[string]any{"namespace": ns},
				"syncPolicy": map[string]any{"automated": map[string]any{"prune": true}}},
		}}
	}
	for _, tc := range []struct {
		name, env string
		obj       *unstructured.Unstructured
		text      string
	}{
		{"staging's Application named as production", "production", app("apps/web/overlays/staging", "web-staging"),
			"environment staging's, not production's"},
		{"production's path into staging's namespace", "production", app("apps/web/overlays/production", "web-staging"),
			`namespace "web-staging"`},
		{"an environment the registry does not know", "qa", app("apps/web/overlays/production", "web-production"),
			`environment "qa" is not in the registry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithRuntimeObjects(tc.obj).Build()
			_, err := Pause(ctx, c, breakglass.Request{Target: breakglass.Target{Controller: breakglass.ArgoCD, Name: "web-production"}, App: "web", Env: tc.env,
				Operator: "alice", Ticket: "INC 1", Registry: reg})
			wantEnvRefusal(t, err, tc.text)
			u, gerr := Get(ctx, c, breakglass.Target{Controller: breakglass.ArgoCD, Name: "web-production"})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if _, paused := u.GetAnnotations()[breakglass.AnnotationTicket]; paused {
				t.Fatal("a refused pause patched the Application")
			}
		})
	}
}
