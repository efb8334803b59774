package overlay

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

const (
	hexAB   = "abababababababababababababababababababababababababababababababab"
	setWeb  = "example.com/shop/web=1.2@sha256:" + hexAB
	setMove = "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + hexAB
)

const setBase = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: example.com/shop/web:1.0@` + dig1 + `
        - name: agent
          image: example.com/shop/agent:2.0@` + dig2 + `
`

// setApp is an application whose own kustomization is kust, on setBase.
func setApp(kust string, more ...string) map[string]string {
	files := map[string]string{
		"base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"base/deployment.yaml":    setBase,
		"app/kustomization.yaml":  kust,
	}
	for i := 0; i+1 < len(more); i += 2 {
		files[more[i]] = more[i+1]
	}
	return files
}

// replacementsKustomization copies the web image from a ConfigMap after
// the images: transformer ran, so no images: entry reaches the container:
// only the proof after the edit can tell.
const replacementsKustomization = `resources:
  - ../base
  - pinned.yaml
images:
  - name: example.com/shop/web
    newTag: "1.0@` + dig1 + `"
replacements:
  - source: {kind: ConfigMap, name: pinned, fieldPath: data.web}
    targets:
      - select: {kind: Deployment, name: web}
        fieldPaths:
          - spec.template.spec.containers.[name=web].image
`

const pinnedConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pinned}\ndata:\n  web: example.com/shop/web:1.0@" + dig1 + "\n"

// TestSetImages: each case writes the sets into the application's own
// kustomization and compares the report, the error and every file with
// testdata/setimages/<name>.golden. A failed set writes nothing.
func TestSetImages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		sets  []string
		code  int
	}{
		{"replace-pinned", setApp("resources:\n  - ../base\nimages:\n  - name: example.com/shop/web\n    newTag: \"1.0@" + dig1 + "\"  # pinned\n"),
			[]string{setWeb}, exitcode.OK},
		{"add-entry", setApp("resources:\n  - ../base\n"), []string{setWeb}, exitcode.OK},
		{"follow-new-name", setApp("resources:\n  - ../base\nimages:\n  - name: example.com/shop/web\n    newName: mirror.example.com/web\n"),
			[]string{setWeb}, exitcode.OK},
		{"move-to-new-name", setApp("resources:\n  - ../base\nimages:\n  - name: example.com/shop/web\n    newName: mirror.example.com/web\n"),
			[]string{setMove}, exitcode.OK},
		{"unchanged", setApp("resources:\n  - ../base\nimages:\n  - name: example.com/shop/web\n    newTag: \"1.2@sha256:" + hexAB + "\"\n"),
			[]string{setWeb}, exitcode.OK},
		{"two-sets", setApp("resources:\n  - ../base\n"), []string{setWeb, "example.com/shop/agent=2.1@sha256:" + hexAB}, exitcode.OK},
		{"not-used", setApp("resources:\n  - ../base\n"), []string{"example.com/tools/sidecar=1@sha256:" + hexAB}, exitcode.Invalid},
		{"digest-field", setApp("resources:\n  - ../base\nimages:\n  - name: example.com/shop/web\n    digest: " + dig1 + "\n"),
			[]string{setWeb}, exitcode.Invalid},
		{"plain-directory", map[string]string{"app/deployment.yaml": setBase}, []string{setWeb}, exitcode.Invalid},
		{"edit-not-rendered", setApp(replacementsKustomization, "app/pinned.yaml", pinnedConfigMap), []string{setWeb}, exitcode.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := tree(t, tc.files)
			before := dump(t, root)
			var sets []ImageSet
			for _, s := range tc.sets {
				set, err := ParseImageSet(s)
				if err != nil {
					t.Fatal(err)
				}
				sets = append(sets, set)
			}
			rep, err := SetImages(context.Background(), render.Options{Root: root, Path: filepath.Join(root, "app")}, sets)
			if exitcode.Code(err) != tc.code {
				t.Fatalf("SetImages: %v, want exit %d", err, tc.code)
			}
			if tc.code == exitcode.Invalid && dump(t, root) != before {
				t.Fatalf("a refused set wrote:\n%s", dump(t, root))
			}
			got := fmt.Sprintf("--- error\n%v\n--- unchanged\n%s--- changes\n%s%s", err, lines(rep.Unchanged), lines(rep.Changes), dump(t, root))
			goldenText(t, "setimages/"+tc.name+".golden", got)
		})
	}
}

func lines(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return strings.Join(s, "\n") + "\n"
}

// TestProveSets: the proof after the edit fails on a render the edit did
// not reach (the render before the edit stands in for an edit that was
// not written), for a new tag and for a new name alike, and passes on the
// render after the edit.
func TestProveSets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// What the proof says it misses: testdata/prove-sets.golden.
	msgs := golden.ErrorLines(t, "testdata/prove-sets.golden", 2)
	for _, tc := range []struct {
		name, set string
	}{
		{"new tag", setWeb},
		{"new name", setMove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := tree(t, setApp("resources:\n  - ../base\n"))
			opts := render.Options{Root: root, Path: filepath.Join(root, "app")}
			set, err := ParseImageSet(tc.set)
			if err != nil {
				t.Fatal(err)
			}
			objs := build(t, opts)
			want := ImageName(set.Name)
			if set.NewName != "" {
				want = set.NewName
			}
			wants := []setWant{{Set: set, Image: want + ":" + set.Value(), Rendered: true}}
			err = proveSets(objs, wants, "app")
			if err == nil {
				t.Fatal("proof on the render before the edit passed")
			}
			msgs(tc.name, err)
			if _, err := SetImages(ctx, opts, []ImageSet{set}); err != nil {
				t.Fatal(err)
			}
			if err := proveSets(build(t, opts), wants, "app"); err != nil {
				t.Fatalf("proof on the render after the edit: %v", err)
			}
		})
	}
}

func build(t *testing.T, opts render.Options) []render.Object {
	t.Helper()
	app, err := render.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := app.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
