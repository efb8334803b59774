package environment

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
)

func TestCheckController(t *testing.T) {
	t.Parallel()
	r, err := New(file, example())
	if err != nil {
		t.Fatal(err)
	}
	app := func(ns string, paths ...string) map[string]any {
		spec := map[string]any{"destination": map[string]any{"namespace": ns}}
		var srcs []any
		for _, p := range paths {
			srcs = append(srcs, map[string]any{"path": p})
		}
		if len(srcs) == 1 {
			spec["source"] = srcs[0]
		} else if len(srcs) > 1 {
			spec["sources"] = srcs
		}
		return map[string]any{"kind": "Application", "metadata": map[string]any{"namespace": "argocd", "name": "checkout"}, "spec": spec}
	}
	ks := map[string]any{"kind": "Kustomization", "metadata": map[string]any{"namespace": "flux-system", "name": "checkout"},
		"spec": map[string]any{"path": "./gitops/apps/checkout/overlays/staging", "targetNamespace": "checkout-staging"}}
	// What each refusal says ([...]): testdata/controller.golden.
	msgs := golden.ErrorLines(t, "testdata/controller.golden", 0)
	for _, tc := range []struct {
		name   string
		obj    map[string]any
		prefix string
		env    string
		text   string
	}{
		{"production", app("checkout-production", "apps/checkout/overlays/production"), "", "production", ""},
		{"flux staging under a prefix", ks, "gitops/", "staging", ""},
		{"staging's path", app("checkout-production", "apps/checkout/overlays/staging"), "", "production", "environment staging's, not production's"},
		{"staging's namespace", app("checkout-staging", "apps/checkout/overlays/production"), "", "production", `namespace "checkout-staging"`},
		{"second source", app("checkout-production", "apps/checkout/overlays/production", "apps/checkout/overlays/dev"), "", "production",
			"environment dev's"},
		{"no path", app("checkout-production"), "", "production", "names no source path"},
		{"outside the GitOps root", app("checkout-production", "apps/checkout/overlays/production"), "gitops/", "production", "belongs to no environment"},
		{"unknown environment", app("checkout-qa", "apps/checkout/overlays/production"), "", "qa", `environment "qa" is not in the registry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.CheckController("checkout", tc.env, ControllerOf(tc.obj, tc.prefix))
			if tc.text == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if re := wantRefusal(t, err); re.Rule == "" {
				t.Errorf("a refusal without a rule: %v", err)
			}
			msgs(tc.name+" ["+tc.text+"]", err)
		})
	}
}

// FuzzControllerOf: a controller object as the API server returns it (any
// JSON) never panics ControllerOf or CheckController, and a path read from
// it never escapes the GitOps root unmarked.
func FuzzControllerOf(f *testing.F) {
	f.Add(`{"kind":"Application","metadata":{"namespace":"argocd","name":"a"},"spec":{"source":{"path":"apps/checkout/overlays/production"},`+
		`"destination":{"namespace":"checkout-production"}}}`, "")
	f.Add(`{"kind":"Kustomization","spec":{"path":"./gitops/../apps/x","targetNamespace":7}}`, "gitops/")
	f.Add(`{"kind":"Application","spec":{"sources":[{"path":"a"},3,{"path":""}]}}`, "")
	r, err := New(file, example())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc, prefix string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		c := ControllerOf(obj, prefix)
		for _, p := range c.Paths {
			if prefix != "" && strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
				t.Fatalf("path %q", p)
			}
		}
		_ = r.CheckController("checkout", "production", c)
	})
}
