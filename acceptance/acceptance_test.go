package acceptance_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/acceptance"
)

func TestObjectName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"checkout-staging": "checkout-staging",
		"Checkout_Staging": "checkout-staging",
		"team/app":         "team-app",
		"--x--":            "x",
		"":                 "app",
		"a.b":              "a.b",
	} {
		if got := acceptance.ObjectName(in); got != want {
			t.Errorf("ObjectName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRenderPathStaysLight keeps the plugin path (render, policy,
// acceptance, cmp) free of Kubernetes clients and controllers, so the
// sidecar starts fast.
func TestRenderPathStaysLight(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps",
		"github.com/throughline-dev/throughline/render",
		"github.com/throughline-dev/throughline/policy",
		"github.com/throughline-dev/throughline/acceptance",
		"github.com/throughline-dev/throughline/cmp").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Split(string(out), "\n") {
		for _, banned := range []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "github.com/google/go-containerregistry/pkg/v1/remote"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("the render path imports %s", dep)
			}
		}
	}
}
