package cmp_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// TestRemoteChartCache: a kustomization whose helmCharts come from an OCI
// registry, pinned by the lock file beside it. The render cache records the
// lock file like any input: the same checkout is a hit that asks the
// registry nothing; a lock pinning another package is a miss that renders
// the new chart.
func TestRemoteChartCache(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(chartfixture.Counter(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))), &requests))
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := strings.TrimPrefix(srv.URL, "http://")
	d1 := chartfixture.Push(t, host, "charts", chartfixture.Tgz(t, "web", "1.2.3", "first"))
	d2 := chartfixture.Push(t, host, "charts", chartfixture.Tgz(t, "web", "1.2.4", "second"))

	root := t.TempDir()
	app := filepath.Join(root, "apps/web")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(version, digest string) {
		t.Helper()
		files := map[string]string{
			"kustomization.yaml": "helmCharts:\n  - name: web\n    repo: oci://" + host + "/charts\n    version: " + version +
				"\n    releaseName: web\n",
			chartsource.LockFile: "apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\ncharts:\n  - repo: oci://" + host +
				"/charts\n    name: web\n    version: " + version + "\n    digest: " + digest + "\n",
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(app, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cache := &cmp.Cache{Dir: t.TempDir()}
	charts := chartsource.ForRender{Fetcher: chartsource.NewFetcher(chartsource.Options{CacheDir: t.TempDir()})}
	gen := func() *cmp.Result {
		t.Helper()
		res, err := cmp.Generate(context.Background(), cmp.Options{
			WorkDir: app,
			Env: cmp.EnvFromEnviron([]string{"ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=web",
				"ARGOCD_APP_SOURCE_PATH=apps/web"}),
			Version: "v0.0.0-test", Cache: cache, Charts: charts,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.CacheErr != nil {
			t.Fatal(res.CacheErr)
		}
		return res
	}
	write("1.2.3", d1)
	if res := gen(); res.CacheHit || !strings.Contains(string(res.Manifests), `"note":"first"`) {
		t.Fatalf("first render: hit %v\n%s", res.CacheHit, res.Manifests)
	}
	before := requests.Load()
	if res := gen(); !res.CacheHit {
		t.Fatal("the same checkout with a remote chart missed the render cache")
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("a cache hit made %d registry requests, want 0", n)
	}
	write("1.2.4", d2)
	if res := gen(); res.CacheHit || !strings.Contains(string(res.Manifests), `"note":"second"`) {
		t.Fatalf("a lock pinning another package: hit %v\n%s", res.CacheHit, res.Manifests)
	}
}
