package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// seedChartCache makes a chart cache holding the example's chart as the
// registry serves it (the OCI layout examples/charts/oci), as make demo
// does, and points THROUGHLINE_CACHE_DIR at it: a render of the example's
// chart app then fetches nothing.
func seedChartCache(t *testing.T) {
	t.Helper()
	src := filepath.Join(repoRoot, "examples", "charts", "oci")
	data, err := os.ReadFile(filepath.Join(src, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index struct{ Manifests []struct{ Digest string } }
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	blobs, err := os.ReadDir(filepath.Join(src, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		kind := "blobs"
		for _, m := range index.Manifests {
			if m.Digest == "sha256:"+b.Name() {
				kind = "manifests"
			}
		}
		data, err := os.ReadFile(filepath.Join(src, "blobs", "sha256", b.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := writeFile(filepath.Join(cache, "charts", kind, "sha256", b.Name()), data); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvCacheDir, cache)
}

// TestRenderChartExample: the example's second app, storefront, is a Helm chart
// app whose chart comes from an OCI registry pinned by digest; its staging
// and production render (from the seeded cache: nothing fetched) through
// policy and declare the same image digest; the overlay that names an
// unpinned chart version is refused (exit 3, unpinned-chart).
func TestRenderChartExample(t *testing.T) {
	seedChartCache(t)
	digests := map[string]string{}
	for _, env := range []string{"staging", "production"} {
		app := filepath.Join(exampleRepo, "apps", "storefront", "overlays", env)
		r := runCLI(t, "render", "--root", exampleRepo, "-o", "json", app)
		if r.code != exitcode.OK {
			t.Fatalf("%s: exit %d\n%s", env, r.code, r.stderr)
		}
		var list struct {
			Items []struct {
				Kind string `json:"kind"`
				Spec struct {
					Environment string `json:"environment"`
					Workloads   []struct {
						Containers []struct{ Digest string } `json:"containers"`
					} `json:"workloads"`
				} `json:"spec"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatal(err)
		}
		acc := list.Items[len(list.Items)-1]
		if acc.Kind != "Acceptance" || acc.Spec.Environment != env || len(acc.Spec.Workloads) != 1 {
			t.Fatalf("%s: Acceptance %+v", env, acc)
		}
		digests[env] = acc.Spec.Workloads[0].Containers[0].Digest
		if !strings.Contains(r.stdout, `"namespace": "storefront-`+env+`"`) && !strings.Contains(r.stdout, `"namespace":"storefront-`+env+`"`) {
			t.Errorf("%s: the release is not in storefront-%s (throughline-helm.yaml)", env, env)
		}
	}
	if digests["staging"] == "" || digests["staging"] != digests["production"] {
		t.Errorf("staging and production declare %v: the same artifact is promoted", digests)
	}
	r := runCLI(t, "render", "--root", exampleRepo, filepath.Join(exampleRepo, "apps", "storefront", "overlays", "refused-unpinned-chart"))
	if r.code != exitcode.Refused || r.stdout != "" || !strings.Contains(r.stderr, "is not pinned by digest") {
		t.Errorf("the unpinned chart: exit %d (want 3, unpinned-chart)\n%s", r.code, r.stderr)
	}
}
