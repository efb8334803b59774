package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/render"
)

// TestDeployBundlesPassPolicy renders every install bundle under deploy/
// through acceptance.Declare (render + the project's own policy), as
// `make release` does with `throughline render` after pinning. argocd is a
// Component, so it is rendered on a stand-in argocd-repo-server (see
// TestArgoCDInstallComponent). A new bundle must be added here.
func TestDeployBundlesPassPolicy(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repoRoot, "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"argocd": true, "crds": true, "flux": true, "serve": true}
	for _, e := range entries {
		if e.IsDir() && !want[e.Name()] {
			t.Errorf("deploy/%s is not rendered by this test", e.Name())
		}
	}
	for _, name := range []string{"crds", "flux", "serve"} {
		t.Run(name, func(t *testing.T) {
			d, err := acceptance.Declare(context.Background(), acceptance.Request{
				Render: render.Options{Root: filepath.Join(repoRoot, "deploy"), Path: name},
			})
			if err != nil {
				t.Fatalf("deploy/%s does not pass throughline's own policy: %v", name, err)
			}
			if len(d.Objects) == 0 {
				t.Fatalf("deploy/%s renders nothing", name)
			}
			checkReleasePin(t, name, d.Objects)
		})
	}
	t.Run("argocd", func(t *testing.T) {
		root := t.TempDir()
		if err := os.CopyFS(filepath.Join(root, "throughline"), os.DirFS(filepath.Join(repoRoot, "deploy", "argocd"))); err != nil {
			t.Fatal(err)
		}
		writeStandInRepoServer(t, root)
		d, err := acceptance.Declare(context.Background(), acceptance.Request{Render: render.Options{Root: root, Path: "argocd"}})
		if err != nil {
			t.Fatalf("deploy/argocd does not pass throughline's own policy: %v", err)
		}
		checkReleasePin(t, "argocd", d.Objects)
	})
}

var releasePin = regexp.MustCompile(`(?m)^ *newTag: "([^"]+)" # throughline-release-pin$`)

// checkReleasePin: in a bundle whose kustomization has the line that
// hack/release.sh rewrites, every rendered throughline image is the pinned
// reference, so the release pin reaches every container (one marked line,
// no image pinned elsewhere).
func checkReleasePin(t *testing.T, bundle string, objects []render.Object) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", bundle, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := releasePin.FindAllSubmatch(data, -1)
	if bundle != "argocd" && bundle != "serve" {
		if len(m) != 0 {
			t.Errorf("deploy/%s has a release pin line that make release does not rewrite", bundle)
		}
		return
	}
	if len(m) != 1 {
		t.Fatalf("deploy/%s/kustomization.yaml: want one release pin line, found %d", bundle, len(m))
	}
	const repo = "ghcr.io/throughline-dev/throughline"
	want := repo + ":" + string(m[0][1])
	n := 0
	for _, o := range objects {
		walkImages(o.Map, func(image string) {
			if strings.HasPrefix(image, repo+":") || strings.HasPrefix(image, repo+"@") {
				n++
				if image != want {
					t.Errorf("deploy/%s renders %s, want the release pin %s", bundle, image, want)
				}
			}
		})
	}
	if n == 0 {
		t.Errorf("deploy/%s renders no %s image", bundle, repo)
	}
}
