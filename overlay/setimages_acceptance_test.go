package overlay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

// committedAcceptance is the Acceptance a Flux overlay commits
// (throughline render --write-acceptance): it declares the images the
// overlay rendered when it was written, in containers lists of its own.
const committedAcceptance = `apiVersion: throughline.dev/v1alpha1
kind: Acceptance
metadata:
  name: web
spec:
  renderedHash: sha256:` + hexAB + `
  workloads:
    - kind: Deployment
      name: web
      containers:
        - name: web
          image: 127.0.0.1:5000/web:1.1@` + dig1 + `
`

// TestSetImagesWithCommittedAcceptance: CI re-pins an overlay that commits
// its Acceptance (the Flux setup) and already moved the image to another
// repository (newName). The Acceptance's containers name the old digest
// until render --write-acceptance refreshes it after the pin; the proof
// after the edit judges the workloads, not that declaration (found by
// e2e/fluxcontrol: pin --set refused every release of such an overlay).
func TestSetImagesWithCommittedAcceptance(t *testing.T) {
	t.Parallel()
	kust := "resources:\n  - ../base\n  - throughline-acceptance.yaml\nimages:\n  - name: example.com/shop/web\n" +
		"    newName: 127.0.0.1:5000/web\n    newTag: \"1.1@" + dig1 + "\"\n"
	root := tree(t, setApp(kust, "app/throughline-acceptance.yaml", committedAcceptance))
	set, err := ParseImageSet(setMove)
	if err != nil {
		t.Fatal(err)
	}
	opts := render.Options{Root: root, Path: filepath.Join(root, "app")}
	if _, err := SetImages(context.Background(), opts, []ImageSet{set}); err != nil {
		t.Fatalf("SetImages on an overlay with its committed Acceptance: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(root, "app", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `newTag: "1.2@sha256:`+hexAB+`"`) {
		t.Fatalf("kustomization after the set:\n%s", b)
	}
	// A workload the edit did not reach is still refused.
	if err := proveSets(build(t, opts), []setWant{{Set: set, Image: "127.0.0.1:5000/web:1.3@" + dig2, Rendered: true}}, "app"); err == nil {
		t.Fatal("proof passed on a workload that does not render the set image")
	}
}
