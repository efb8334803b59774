package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// chartRoot is a new repository root (a .git directory) holding files.
func chartRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, files)
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPinChartKustomization: pin --check refuses an unpinned oci:// chart of
// a kustomization's helmCharts, pin --charts writes its manifest digest into
// the lock file beside the kustomization, then --check passes; resolve
// prints the same digest; a re-push of the version is refused by pin and by
// drift check naming both digests.
func TestPinChartKustomization(t *testing.T) {
	host := startRegistry(t)
	v1 := chartfixture.Tgz(t, "web", "1.2.3", "first")
	d1 := chartfixture.Push(t, host, "charts", v1)
	root := chartRoot(t, map[string]string{"apps/web/kustomization.yaml": `helmCharts:
  - name: web
    repo: oci://` + host + `/charts
    version: 1.2.3
    releaseName: web
`})
	app := filepath.Join(root, "apps/web")
	lock := filepath.Join(app, chartsource.LockFile)

	r := runCLI(t, "pin", "--check", app)
	if r.code != exitcode.Refused || !strings.Contains(r.stdout, "UNPINNED chart oci://"+host+"/charts/web:1.2.3") ||
		!strings.Contains(r.stderr, "run throughline pin") {
		t.Fatalf("pin --check of an unpinned chart: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "pin", "--charts", app); r.code != exitcode.OK || !strings.Contains(r.stdout, d1) {
		t.Fatalf("pin --charts: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(readFile(t, lock), "digest: "+d1) {
		t.Fatalf("lock file:\n%s", readFile(t, lock))
	}
	// --charts: the images of a helmCharts kustomization need the in-process
	// Helm render (render/), which is not this test's business.
	if r := runCLI(t, "pin", "--check", "--charts", app); r.code != exitcode.OK || !strings.Contains(r.stdout, "OK every remote chart (1)") {
		t.Fatalf("pin --check after pin: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	ref := "oci://" + host + "/charts/web:1.2.3"
	if r := runCLI(t, "resolve", ref); r.code != exitcode.OK || !strings.Contains(r.stdout, d1) {
		t.Fatalf("resolve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rec := filepath.Join(t.TempDir(), "staging.yaml")
	if r := runCLI(t, "drift", "record", ref, "--out", rec); r.code != exitcode.OK {
		t.Fatalf("drift record: exit %d\n%s", r.code, r.stderr)
	}

	d2 := chartfixture.Push(t, host, "charts", chartfixture.Tgz(t, "web", "1.2.3", "replaced"))
	r = runCLI(t, "pin", "--charts", app)
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, d1) || !strings.Contains(r.stderr, d2) ||
		!strings.Contains(r.stderr, "REJECTED chart version") {
		t.Fatalf("pin after a re-push: exit %d, want 3 naming %s and %s\n%s", r.code, d1, d2, r.stderr)
	}
	if !strings.Contains(readFile(t, lock), "digest: "+d1) {
		t.Fatal("a refused pin changed the lock file")
	}
	want := "REJECTED chart " + ref + " resolved to " + d1 + " and " + d2
	if c := runCLI(t, "drift", "check", rec); c.code != exitcode.Refused || !strings.Contains(c.stdout, want) {
		t.Fatalf("drift check: exit %d, want 3 and %q\n%s\n%s", c.code, want, c.stdout, c.stderr)
	}
	if c := runCLI(t, "drift", "check", "--offline", rec); c.code != exitcode.OK {
		t.Fatalf("drift check --offline of one record: exit %d\n%s", c.code, c.stderr)
	}
}

// TestPinChartHelmApp: an Argo CD Helm-style app (a Chart.yaml) with an HTTP
// repository dependency: pin writes the lock beside Chart.yaml (the .tgz
// sha256, equal to index.yaml's digest) and keeps an existing lock's
// comments; a range is refused (exit 3) naming the file and field.
func TestPinChartHelmApp(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv(EnvCacheDir, t.TempDir())
	repo := chartfixture.StartRepo(t)
	pkg := chartfixture.Tgz(t, "redis", "18.0.1", "r")
	repo.Publish(t, [][]byte{pkg}, "", "")
	chart := func(version string) string {
		return "apiVersion: v2\nname: shop\nversion: 0.1.0\ndependencies:\n  - name: redis\n    version: " + version +
			"\n    repository: " + repo.URL() + "\n  - name: local\n    version: 0.1.0\n    repository: file://../local\n"
	}
	root := chartRoot(t, map[string]string{
		"apps/shop/Chart.yaml": chart(`"18.0.1"`),
		"apps/shop/" + chartsource.LockFile: "# reviewed by the platform team\napiVersion: throughline.dev/v1alpha1\n" +
			"kind: ChartLock\ncharts: []\n",
	})
	app := filepath.Join(root, "apps/shop")
	if r := runCLI(t, "pin", app); r.code != exitcode.OK {
		t.Fatalf("pin: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := readFile(t, filepath.Join(app, chartsource.LockFile))
	if !strings.HasPrefix(got, "# reviewed by the platform team\n") || !strings.Contains(got, "digest: "+chartfixture.Digest(pkg)) ||
		strings.Contains(got, "local") {
		t.Fatalf("lock file:\n%s", got)
	}
	if err := os.WriteFile(filepath.Join(app, "Chart.yaml"), []byte(chart(`"^18.0"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "pin", app)
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, "apps/shop/Chart.yaml") || !strings.Contains(r.stderr, "dependencies[0].version") {
		t.Fatalf("pin of a range: exit %d, want 3 naming the file and field\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, "resolve", repo.URL()+"/redis:^18.0"); r.code != exitcode.Refused {
		t.Fatalf("resolve of a range: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, "resolve", repo.URL()+"/redis:18.0.1", "nginx:1.27"); r.code != exitcode.Usage {
		t.Fatalf("resolve of a chart and an image: exit %d\n%s", r.code, r.stderr)
	}
}
