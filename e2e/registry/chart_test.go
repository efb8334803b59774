//go:build e2e

package registry

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmregistry "helm.sh/helm/v4/pkg/registry"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/internal/chartfixture"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/render"
)

// TestChartPinAgainstDistribution: a Helm chart pushed with Helm's SDK to
// the real registry (basic auth): pin writes its manifest digest into the
// lock file beside the kustomization, resolve prints it, a warm fetch needs
// no registry at all (the registry is stopped), and a re-push under the same
// version is refused by pin and by drift check naming both digests.
func TestChartPinAgainstDistribution(t *testing.T) {
	const user, password = "ci", "s3cr3t-pw"
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{Username: user, Password: password})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dockerConfig := t.TempDir()
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
	must(t, os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(cfg), 0o600))
	cache := t.TempDir()
	env := []string{"DOCKER_CONFIG=" + dockerConfig, "THROUGHLINE_CACHE_DIR=" + cache}
	auth := helmregistry.ClientOptBasicAuth(user, password)

	d1 := chartfixture.Push(t, reg.Host, "charts", chartfixture.Tgz(t, "web", "1.2.3", "first"), auth)
	root := t.TempDir()
	app := filepath.Join(root, "apps", "web")
	must(t, os.MkdirAll(app, 0o755))
	must(t, os.Mkdir(filepath.Join(root, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte("helmCharts:\n  - name: web\n    repo: oci://"+reg.Host+
		"/charts\n    version: 1.2.3\n    releaseName: web\n"), 0o644))
	ref := "oci://" + reg.Host + "/charts/web:1.2.3"

	if r := cli(t, ctx, env, "pin", "--check", "--charts", app); r.code != 3 || !strings.Contains(r.stdout, "UNPINNED chart "+ref) {
		t.Fatalf("pin --check of the unpinned chart: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, ctx, env, "pin", "--charts", app); r.code != 0 || !strings.Contains(r.stdout, d1) {
		t.Fatalf("pin --charts: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	lock, err := os.ReadFile(filepath.Join(app, chartsource.LockFile))
	must(t, err)
	if !strings.Contains(string(lock), "digest: "+d1) {
		t.Fatalf("lock file:\n%s", lock)
	}
	if r := cli(t, ctx, []string{"DOCKER_CONFIG=" + t.TempDir()}, "resolve", ref); r.code != 1 || !strings.Contains(r.stderr, "UNAUTHORIZED") {
		t.Fatalf("resolve without credentials: exit %d %s", r.code, r.stderr)
	}
	if r := cli(t, ctx, env, "resolve", ref); r.code != 0 || !strings.Contains(r.stdout, d1) {
		t.Fatalf("resolve: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	records := t.TempDir()
	staging := filepath.Join(records, "staging.yaml")
	if r := cli(t, ctx, env, "drift", "record", ref, "--out", staging); r.code != 0 || !strings.Contains(r.stdout, d1) {
		t.Fatalf("drift record: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	// Warm: the package pinned in the lock comes from the cache pin filled,
	// with no credentials and the fetcher offline.
	fsys, err := render.NewConfinedFS(root, 0, nil)
	must(t, err)
	f := chartsource.NewFetcher(chartsource.Options{CacheDir: filepath.Join(cache, "charts"), Offline: true})
	if _, err := (chartsource.Source{FS: fsys, Fetcher: f}).Chart(ctx, "apps/web",
		chartsource.Ref{Repo: "oci://" + reg.Host + "/charts", Name: "web", Version: "1.2.3"}); err != nil {
		t.Fatalf("warm offline fetch of the pinned chart: %v", err)
	}

	d2 := chartfixture.Push(t, reg.Host, "charts", chartfixture.Tgz(t, "web", "1.2.3", "replaced"), auth)
	if d2 == d1 {
		t.Fatal("the re-push has the same digest")
	}
	if r := cli(t, ctx, env, "pin", "--charts", app); r.code != 3 || !strings.Contains(r.stderr, d1) || !strings.Contains(r.stderr, d2) {
		t.Fatalf("pin after the re-push: exit %d, want 3 naming %s and %s: %s", r.code, d1, d2, r.stderr)
	}
	want := "REJECTED chart " + ref + " resolved to " + d1 + " and " + d2
	if r := cli(t, ctx, env, "drift", "check", staging); r.code != 3 || !strings.Contains(r.stdout, want) {
		t.Fatalf("drift check after the re-push: exit %d, want 3 and %q: %s %s", r.code, want, r.stdout, r.stderr)
	}
}
