package overlay

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

// TestPlanPinAllowList: PlanPin decides as render does. An image the
// allow-list lets through in the environment (even one with a malformed
// digest, which render accepts under the exception) is Allowed; scoped to
// another environment, or judged in no environment (a directory named dev
// when the caller does not apply the directory convention), it is Unpinned.
func TestPlanPinAllowList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pod := func(image string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    image: " + image + "\n"
	}
	root := tree(t, map[string]string{
		"throughline-allowlist.yaml": "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages:\n" +
			"  - {pattern: 'example.com/vendor/*', environments: [dev], reason: vendor tags only (SEC-1)}\n",
		"apps/a/overlays/dev/pod.yaml":        pod("example.com/vendor/agent:3"),
		"apps/a/overlays/production/pod.yaml": pod("example.com/vendor/agent:3"),
		"apps/a/overlays/odd/pod.yaml":        pod("example.com/vendor/agent:3@sha256:abc"),
	})
	for _, tc := range []struct {
		dir, env         string
		byDirectory      bool
		allowed, refused int
	}{
		{"apps/a/overlays/dev", "", true, 1, 0},
		{"apps/a/overlays/production", "", true, 0, 1},
		{"apps/a/overlays/dev", "production", true, 0, 1},
		{"apps/a/overlays/production", "dev", false, 1, 0},
		{"apps/a/overlays/odd", "dev", false, 1, 0},
		// With a registry the caller does not let the directory name
		// choose: a directory named dev is judged in no environment.
		{"apps/a/overlays/dev", "", false, 0, 1},
	} {
		p, err := PlanPin(ctx, render.Options{Root: root, Path: filepath.Join(root, tc.dir)},
			PinPolicy{Environment: tc.env, DirectoryEnvironment: tc.byDirectory})
		if err != nil {
			t.Fatalf("%s in %q: %v", tc.dir, tc.env, err)
		}
		if len(p.Allowed) != tc.allowed || len(p.Unpinned) != tc.refused {
			t.Errorf("%s in %q (%s): allowed %v, unpinned %v", tc.dir, tc.env, p.Environment, p.Allowed, p.Unpinned)
		}
		if tc.allowed == 1 && !strings.Contains(p.Allowed[0].String(), "SEC-1") {
			t.Errorf("the exception is listed without its reason: %s", p.Allowed[0])
		}
	}
	bad := tree(t, map[string]string{"throughline-allowlist.yaml": "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: x}]\n",
		"app/pod.yaml": pod("x:1")})
	if _, err := PlanPin(ctx, render.Options{Root: bad, Path: filepath.Join(bad, "app")}, PinPolicy{}); err == nil || !strings.Contains(err.Error(), "images[0].reason") {
		t.Errorf("a bad allow-list: %v", err)
	}
}
