package main

import (
	"os"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// TestRenderPinnedChart: `throughline render` fetches a kustomization's
// remote chart only as the lock file pins it: unpinned, exit 3
// (unpinned-chart) with nothing fetched; pinned, the chart's objects render;
// re-pushed under the same version, the render still serves the pinned
// package (same hash), from a cold cache too (fetched by digest).
func TestRenderPinnedChart(t *testing.T) {
	host := startRegistry(t)
	chartfixture.Push(t, host, "charts", chartfixture.Tgz(t, "web", "1.2.3", "first"))
	root := chartRoot(t, map[string]string{"apps/web/kustomization.yaml": `helmCharts:
  - name: web
    repo: oci://` + host + `/charts
    version: 1.2.3
    releaseName: web
`})
	app := root + "/apps/web"
	r := runCLI(t, "render", "--root", root, app)
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, "is not pinned by digest") {
		t.Fatalf("render of an unpinned remote chart: exit %d, want 3 (unpinned-chart)\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, "pin", "--charts", app); r.code != exitcode.OK {
		t.Fatalf("pin --charts: exit %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, "render", "--root", root, app)
	if r.code != exitcode.OK || !strings.Contains(r.stdout, "note: first") {
		t.Fatalf("render of a pinned chart: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	hash := func() string {
		t.Helper()
		r := runCLI(t, "render", "--root", root, "--hash", app)
		if r.code != exitcode.OK {
			t.Fatalf("render --hash: exit %d\n%s", r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	pinned := hash()
	chartfixture.Push(t, host, "charts", chartfixture.Tgz(t, "web", "1.2.3", "replaced"))
	t.Setenv(EnvCacheDir, t.TempDir()) // cold: the package comes from the registry, by the pinned digest
	if got := hash(); got != pinned {
		t.Fatalf("a chart re-pushed under the pinned version changed the render: %s, pinned %s", got, pinned)
	}
	if err := os.Remove(app + "/throughline-charts.lock.yaml"); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "render", "--root", root, app); r.code != exitcode.Refused {
		t.Fatalf("render after the lock file was removed: exit %d, want 3\n%s", r.code, r.stderr)
	}
}
