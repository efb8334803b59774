package health

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestFluxExamplesTargetNamespace: a Flux Kustomization's targetNamespace
// moves the committed Acceptance, not the namespace its spec.workloads
// name, so an example whose targetNamespace is not its overlay's namespace
// ships an Acceptance the verifier rejects as Invalid (issue 22: it used to
// vouch for another namespace's Deployment). Every example Kustomization
// with a targetNamespace must agree with the overlay it applies.
func TestFluxExamplesTargetNamespace(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/flux/clusters/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Flux examples: %v", err)
	}
	more, _ := filepath.Glob("../examples/gitops-env/clusters/*/*.yaml")
	checked := 0
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var k struct {
				Kind string `json:"kind"`
				Spec struct {
					Path            string `json:"path"`
					TargetNamespace string `json:"targetNamespace"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(doc, &k); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if k.Kind != "Kustomization" || k.Spec.TargetNamespace == "" {
				continue
			}
			overlay := filepath.Join("../examples/gitops-env", filepath.FromSlash(strings.TrimPrefix(k.Spec.Path, "./")), "kustomization.yaml")
			raw, err := os.ReadFile(overlay)
			if err != nil {
				t.Fatalf("%s: spec.path %s: %v", file, k.Spec.Path, err)
			}
			var o struct {
				Namespace string `json:"namespace"`
			}
			if err := yaml.Unmarshal(raw, &o); err != nil {
				t.Fatalf("%s: %v", overlay, err)
			}
			if o.Namespace != k.Spec.TargetNamespace {
				t.Errorf("%s: targetNamespace %s, but %s renders namespace %q: the Acceptance would name workloads outside its namespace",
					file, k.Spec.TargetNamespace, overlay, o.Namespace)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no Kustomization with a targetNamespace checked")
	}
}
