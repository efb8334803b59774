package acceptance

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// TestDeclareEnvironmentFromCaller: the environment a render is judged in
// is the caller's decision. A directory a contributor names
// overlays/dev (or overlays/production) gets dev's (production's) scoped
// exceptions only when the caller says the directory convention holds (a
// repository without a registry) or names the environment itself; else it
// is judged, and declared, in no environment.
func TestDeclareEnvironmentFromCaller(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTestFiles(t, root, map[string]string{
		policy.AllowListFile: "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages:\n" +
			"  - {pattern: 'example.com/vendor/*', environments: [dev], reason: vendor tags only (SEC-1)}\n" +
			"secrets:\n  - {name: db, namespace: shop, environments: [production], reason: legacy (SEC-2)}\n",
		"apps/a/overlays/dev/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec:\n" +
			"  containers:\n  - name: a\n    image: example.com/vendor/agent:3\n",
		"apps/a/overlays/production/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: shop}\n" +
			"stringData: {password: hunter2}\n",
		"apps/a/overlays/staging/deployment.yaml": testDeployment,
	})
	for _, tc := range []struct {
		name, dir, env string
		byDirectory    bool
		refused        bool
		declared       string
	}{
		{"dev-scoped image, no environment given", "apps/a/overlays/dev", "", false, true, ""},
		{"production-scoped Secret, no environment given", "apps/a/overlays/production", "", false, true, ""},
		{"no environment given: none declared", "apps/a/overlays/staging", "", false, false, ""},
		{"dev-scoped image by the directory convention", "apps/a/overlays/dev", "", true, false, "dev"},
		{"production-scoped Secret by the directory convention", "apps/a/overlays/production", "", true, false, "production"},
		{"dev-scoped image, dev given", "apps/a/overlays/dev", "dev", false, false, "dev"},
		{"a given environment wins over the directory", "apps/a/overlays/dev", "production", true, true, ""},
		{"the directory convention declares the environment", "apps/a/overlays/staging", "", true, false, "staging"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Declare(context.Background(), Request{
				Render:      render.Options{Root: root, Path: filepath.Join(root, filepath.FromSlash(tc.dir))},
				Environment: tc.env, DirectoryEnvironment: tc.byDirectory,
			})
			var refusal *policy.Refusal
			switch {
			case tc.refused && !errors.As(err, &refusal):
				t.Fatalf("want a policy refusal, got %v", err)
			case tc.refused:
				return
			case err != nil:
				t.Fatal(err)
			}
			if got := d.Acceptance.Spec.Environment; got != tc.declared {
				t.Errorf("spec.environment %q, want %q", got, tc.declared)
			}
		})
	}
}
