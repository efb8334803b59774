package acceptance

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/throughline-dev/throughline/render"
)

// TestLabelsAreValid declares apps whose names do not fit a label value:
// every label the Acceptance carries must be one the API server accepts,
// stable, and distinct for distinct names; the spec keeps the full name.
func TestLabelsAreValid(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("checkout-service-", 5) // 85 characters
	tests := []struct{ app, env string }{
		{"checkout", "production"},
		{long[:80], "production"},
		{long, strings.Repeat("e", 70)},
		{strings.Repeat("a", 51) + "-" + strings.Repeat("b", 30), "dev"}, // the cut lands on "-"
		{strings.Repeat("a", 51) + "." + strings.Repeat("b", 30), "dev"}, // ... on "."
		{strings.Repeat("x", 253), "dev"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		root := t.TempDir()
		writeTestFiles(t, root, map[string]string{"apps/web/overlays/production/deployment.yaml": testDeployment})
		d, err := Declare(context.Background(), Request{
			Render: render.Options{Root: root, Path: root + "/apps/web/overlays/production"}, App: tt.app, Environment: tt.env,
		})
		if err != nil {
			t.Fatal(err)
		}
		a := d.Acceptance
		if a.Spec.App != tt.app || a.Spec.Environment != tt.env {
			t.Errorf("spec lost the full name: %q %q", a.Spec.App, a.Spec.Environment)
		}
		for k, v := range a.Labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("app %q: label %s=%q: %v", tt.app, k, v, errs)
			}
		}
		if errs := validation.IsDNS1123Subdomain(a.Name); len(errs) > 0 {
			t.Errorf("app %q: name %q: %v", tt.app, a.Name, errs)
		}
		v := a.Labels["throughline.dev/app"]
		if v != LabelValue(tt.app) || v != LabelValue(strings.Clone(tt.app)) {
			t.Errorf("app label %q is not LabelValue(%q) = %q", v, tt.app, LabelValue(tt.app))
		}
		if other, dup := seen[v]; dup && other != tt.app {
			t.Errorf("apps %q and %q share the label %q", other, tt.app, v)
		}
		seen[v] = tt.app
	}
	if got := LabelValue("checkout"); got != "checkout" {
		t.Errorf("a short name changed: %q", got)
	}
	if got := LabelValue(long); len(got) != 63 || !strings.HasPrefix(got, long[:52]) {
		t.Errorf("LabelValue(%q) = %q: want the first 52 characters, a dash and 10 hex digits", long, got)
	}
}
