//go:build e2e

package admission

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestSummaryPolicies creates deploy/admission's Kyverno
// ImageValidatingPolicy and policy-controller ClusterImagePolicy on a real
// kube-apiserver that serves the controllers' own CRDs
// (THROUGHLINE_ADMISSION_CRDS, hack/admission-crds.sh), with strict field
// validation: every field of the policies is one the CRD's schema knows,
// of the right type. The same policy with a misspelt field is refused, so
// the check does find one. It does not run Kyverno or policy-controller
// (their admission decisions are the manual check of docs/supply-chain.md).
func TestSummaryPolicies(t *testing.T) {
	crds := os.Getenv("THROUGHLINE_ADMISSION_CRDS")
	if crds == "" {
		t.Fatal("THROUGHLINE_ADMISSION_CRDS is not set (hack/e2e-assets.sh copies the CRDs)")
	}
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := api.InstallCRDs(ctx, withoutConversion(t, crds)); err != nil {
		t.Fatal(err)
	}
	strict := client.FieldValidation("Strict")
	// policy-controller serves v1beta1 and stores v1alpha1 through its
	// conversion webhook, which is not running here: the CRDs are
	// installed with conversion None (the schemas are the controllers').
	for _, tc := range []struct{ file, kind, misspelt string }{
		{"kyverno-imagevalidatingpolicy.yaml", "ImageValidatingPolicy", "validationActions"},
		{"policy-controller-clusterimagepolicy.yaml", "ClusterImagePolicy", "signatureFormat"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, "deploy", "admission", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := kio.FromBytes(data)
			if err != nil || len(nodes) != 1 {
				t.Fatalf("%s: %d objects, %v", tc.file, len(nodes), err)
			}
			s, err := nodes[0].String()
			if err != nil {
				t.Fatal(err)
			}
			bad := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(strings.Replace(s, tc.misspelt+":", tc.misspelt+"s:", 1)), &bad.Object); err != nil {
				t.Fatal(err)
			}
			bad.SetName(bad.GetName() + "-misspelt")
			err = api.Client.Create(ctx, bad, strict)
			if err == nil || !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.misspelt+"s") {
				t.Fatalf("%s with %ss: got %v, want the API server to refuse the unknown field", tc.kind, tc.misspelt, err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
				t.Fatal(err)
			}
			if u.GetKind() != tc.kind {
				t.Fatalf("%s holds a %s", tc.file, u.GetKind())
			}
			if err := api.Client.Create(ctx, u, strict); err != nil {
				t.Fatalf("%s does not fit its CRD: %v", tc.file, err)
			}
		})
	}
}

// withoutConversion copies the CRDs of dir with their conversion webhook
// replaced by strategy None into a temporary directory.
func withoutConversion(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		if data, err = yaml.Marshal(&crd); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
