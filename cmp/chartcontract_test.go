package cmp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// TestAcceptanceCarriesTheChart: the Acceptance the plugin emits for an app
// whose helmCharts come from an OCI registry (pushed with Helm's SDK)
// names the chart: name, version, the pinned manifest digest, the
// repository, and its values schema (digest, $id, version). A cache hit
// emits the same Acceptance; a lock pinning another version is a miss
// whose Acceptance names the new chart.
func TestAcceptanceCarriesTheChart(t *testing.T) {
	host := chartfixture.StartRegistry(t)
	repo := "oci://" + host + "/charts"
	d1 := chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.2.3", "first"))
	d2 := chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.2.4", "second"))
	root := t.TempDir()
	app := filepath.Join(root, "apps/web")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(version, digest string) {
		t.Helper()
		for name, body := range map[string]string{
			"kustomization.yaml": "helmCharts:\n  - name: web\n    repo: " + repo + "\n    version: " + version + "\n    releaseName: web\n",
			chartsource.LockFile: "apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\ncharts:\n  - repo: " + repo +
				"\n    name: web\n    version: " + version + "\n    digest: " + digest + "\n",
		} {
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
			Env:     cmp.EnvFromEnviron([]string{"ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=web", "ARGOCD_APP_SOURCE_PATH=apps/web"}),
			Version: "v0.0.0-test", Cache: cache, Charts: charts,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	check := func(res *cmp.Result, version, digest string) {
		t.Helper()
		cs := res.Acceptance.Spec.Charts
		if len(cs) != 1 || cs[0].Name != "web" || cs[0].Version != version || cs[0].Digest != digest || cs[0].Source != repo ||
			cs[0].ValuesSchema == nil || cs[0].ValuesSchema.Digest != chartfixture.Digest([]byte(chartfixture.ValuesSchema)) ||
			cs[0].ValuesSchema.ID != "https://charts.example.invalid/web/values.schema.json" || cs[0].ValuesSchema.Version != "2" {
			t.Fatalf("Acceptance spec.charts %+v, want web %s %s from %s with its values schema", cs, version, digest, repo)
		}
	}
	write("1.2.3", d1)
	first := gen()
	check(first, "1.2.3", d1)
	if hit := gen(); !hit.CacheHit || string(hit.Manifests) != string(first.Manifests) {
		t.Fatalf("cache hit %v: the emitted manifests differ", hit.CacheHit)
	}
	write("1.2.4", d2)
	moved := gen()
	if moved.CacheHit {
		t.Fatal("a lock pinning another chart version hit the cache")
	}
	check(moved, "1.2.4", d2)
}
