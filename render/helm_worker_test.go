package render_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/render/helmrender"
)

// TestHelmInWorkerAsInProcess: chart apps and helmCharts render in the
// render child as in-process (objects, hash, errors), remote charts
// included: the parent fetches them from the ChartSource and hands the
// packages to the child, which fetches nothing. As the lean plugin does,
// the parent here links no Helm engine and starts the child from
// Worker.HelmPath (this test binary, which links one); its own Path is a
// binary that does not exist, so a chart render that used it would fail.
func TestHelmInWorkerAsInProcess(t *testing.T) {
	web := chartTgz(t, map[string]string{
		"web/Chart.yaml":       "apiVersion: v2\nname: web\nversion: 2.0.0\n",
		"web/templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ .Release.Name }}}\n",
	})
	remote := writeTree(t, map[string]string{
		"app/kustomization.yaml": "helmCharts:\n- {name: web, version: 2.0.0, repo: \"oci://registry.example.test/charts\", releaseName: front}\n",
		"bad/Chart.yaml":         hostileChart,
		"bad/templates/cm.yaml":  fmt.Sprintf(configMapTpl, `{{ fail "boom" }}`),
	})
	charts := &testCharts{packages: map[render.ChartRef][]byte{{Repo: "oci://registry.example.test/charts", Name: "web", Version: "2.0.0"}: web}}
	// The plugin's parameters, which agree with the file.
	staging, err := render.ParseHelmParameters([]byte(`[{"name":"valueFiles","array":["values-staging.yaml"]},{"name":"releaseName","string":"shop"}]`))
	if err != nil {
		t.Fatal(err)
	}
	shop := withHelmParameters(t, "testdata/helm/repo", "apps/shop", helmParams("releaseName: shop\nvalueFiles: [values-staging.yaml]\n"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lean := &render.Worker{Path: filepath.Join(t.TempDir(), "no-such-binary"), Args: []string{render.WorkerCommand}, HelmPath: self}
	cases := []render.Options{
		{Root: shop, Path: "apps/shop", Helm: staging},
		{Root: "testdata/helm/repo", Path: "apps/web/overlays/staging"},
		{Root: remote, Path: "app", Charts: charts},
		{Root: remote, Path: "bad"},
	}
	for _, opts := range cases {
		t.Run(opts.Path, func(t *testing.T) {
			want, wantErr := renderOpts(opts)
			render.UseWorker(lean)
			render.UseHelm(nil)
			got, gotErr := renderOpts(opts)
			render.UseWorker(nil)
			render.UseHelm(helmrender.Engine{})
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || exitcode.Code(gotErr) != exitcode.Code(wantErr) {
				t.Fatalf("error %v (exit %d), in-process %v (exit %d)", gotErr, exitcode.Code(gotErr), wantErr, exitcode.Code(wantErr))
			}
			wantHash, _ := render.Hash(want)
			gotHash, _ := render.Hash(got)
			if len(got) != len(want) || gotHash != wantHash {
				t.Errorf("child: %d objects, hash %s; in-process: %d objects, hash %s", len(got), gotHash, len(want), wantHash)
			}
		})
	}
}

// TestNoHelmEngine: a process that links no Helm engine and has no Helm
// render binary refuses a chart (exit 4, naming the chart), it does not
// render it as plain files.
func TestNoHelmEngine(t *testing.T) {
	render.UseHelm(nil)
	defer render.UseHelm(helmrender.Engine{})
	_, err := renderOpts(render.Options{Root: "testdata/helm/repo", Path: "apps/shop"})
	if !errors.Is(err, render.ErrNoHelm) || exitcode.Code(err) != exitcode.Invalid || invalidFile(t, err) != "apps/shop" {
		t.Errorf("got %v", err)
	}
}
