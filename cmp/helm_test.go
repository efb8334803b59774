package cmp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/render/helmrender"
)

// These tests render charts in-process with Helm's SDK, as the throughline
// binary does.
func init() { render.UseHelm(helmrender.Engine{}) }

// chartRepo is render's golden repository (a chart app, apps/shop, and a
// kustomization with helmCharts), copied so that a test can change a file.
func chartRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := "../render/testdata/helm/repo"
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// shopParams writes the parameters file of apps/shop in root: the
// release shop in shop-staging (the Applications' destination), then body.
func shopParams(t *testing.T, root, body string) {
	t.Helper()
	data := "apiVersion: throughline.dev/v1alpha1\nkind: HelmParameters\nreleaseName: shop\nnamespace: shop-staging\n" + body
	if err := os.WriteFile(filepath.Join(root, "apps/shop", render.HelmParametersFile), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// generateChart generates the chart app apps/shop of root as Argo CD
// would, with env added.
func generateChart(t *testing.T, root string, env ...string) (*cmp.Result, error) {
	t.Helper()
	const path = "apps/shop"
	return cmp.Generate(context.Background(), cmp.Options{
		WorkDir: filepath.Join(root, path),
		Env: cmp.EnvFromEnviron(append([]string{
			"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-staging", "ARGOCD_APP_REVISION=1",
			"ARGOCD_APP_SOURCE_PATH=" + path, "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/gitops.git",
			"ARGOCD_ENV_ENVIRONMENT=staging", "KUBE_VERSION=1.31.2", "KUBE_API_VERSIONS=v1,apps/v1,monitoring.coreos.com/v1",
		}, env...)),
		Version: "v0.0.0-test",
	})
}

// TestGenerateChartApp: a chart app renders with the Helm parameters of
// its file in Git (value files, --set, release, namespace, versions for
// .Capabilities), named as Argo CD's Helm source names them, not with the
// cluster's KUBE_VERSION; the Acceptance carries the hash of the chart's
// objects and the workloads' image digests, as for any app.
func TestGenerateChartApp(t *testing.T) {
	t.Parallel()
	root := chartRepo(t)
	shopParams(t, root, "valueFiles: [values-staging.yaml]\nparameters: [{name: replicaCount, value: \"4\"}]\n"+
		"kubeVersion: \"1.31.2\"\napiVersions: [v1, apps/v1, monitoring.coreos.com/v1]\n")
	res, err := generateChart(t, root, `ARGOCD_APP_PARAMETERS=[{"name":"environment","string":"staging"}]`, "KUBE_VERSION=1.34.0")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.DecodeManifests(res.Manifests, "stdout")
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Manifests)
	for _, want := range []string{`"name":"shop-shop"`, `"replicas":4`, `"greeting":"hello from staging"`, `"releaseNamespace":"shop-staging"`,
		`"kubeVersion":"v1.31.2"`, `"hasServiceMonitor":"true"`, `"helm.sh/hook":"test"`, `"kind":"CustomResourceDefinition"`} {
		if !strings.Contains(out, want) {
			t.Errorf("%s not in the output:\n%s", want, out)
		}
	}
	hash, _ := render.Hash(objs[:len(objs)-1])
	a := res.Acceptance
	if a.Spec.RenderedHash != hash || a.Spec.Environment != "staging" || a.Spec.App != "shop" {
		t.Errorf("Acceptance %+v (hash %s)", a.Spec, hash)
	}
	if len(a.Spec.Workloads) == 0 || a.Spec.Workloads[0].Containers[0].Digest != "sha256:"+strings.Repeat("a", 64) {
		t.Errorf("workloads %+v", a.Spec.Workloads)
	}
}

// TestGenerateChartRefusesUnpinnedImage: an image a chart template
// produces from a tag is refused by the pin rule as any other (exit 3).
func TestGenerateChartRefusesUnpinnedImage(t *testing.T) {
	t.Parallel()
	root := chartRepo(t)
	tpl := filepath.Join(root, "apps/shop/templates/deployment.yaml")
	data, err := os.ReadFile(tpl)
	if err != nil {
		t.Fatal(err)
	}
	tagged := strings.Replace(string(data), "@{{ .Values.image.digest }}", ":{{ .Values.image.tag }}", 1)
	if err := os.WriteFile(tpl, []byte(tagged), 0o644); err != nil {
		t.Fatal(err)
	}
	shopParams(t, root, "parameters: [{name: image.tag, value: latest}]\n")
	res, err := generateChart(t, root)
	var refusal *policy.Refusal
	if !errors.As(err, &refusal) || res != nil || exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("got %v, %v; want a refusal and no result", res, err)
	}
	if v := refusal.Violations; len(v) != 1 || v[0].Rule != policy.RuleUnpinnedImage ||
		v[0].Value != "registry.example.test/shop:latest" || v[0].File != "apps/shop/templates/deployment.yaml" {
		t.Errorf("the refusal does not name the image and the template: %+v", v)
	}
}

// TestGenerateChartSchemaViolation: values the chart's values.schema.json
// rejects are exit 4 naming it.
func TestGenerateChartSchemaViolation(t *testing.T) {
	t.Parallel()
	root := chartRepo(t)
	shopParams(t, root, "parameters: [{name: image.digest, value: latest}]\n")
	_, err := generateChart(t, root)
	if exitcode.Code(err) != exitcode.Invalid || findingOf(t, err).file != "apps/shop/values.schema.json" {
		t.Fatalf("got %v", err)
	}
	// The value's pointer (/image/digest) is in the message only.
	msgs := golden.ErrorLines(t, "testdata/chart-schema.golden", 1)
	msgs("schema violation", err)
}

// TestGenerateChartBadParameters: plugin parameters that are not Argo CD's
// JSON list are exit 4 naming ARGOCD_APP_PARAMETERS; a parameters file
// naming a value file outside the repository is exit 4 naming the file.
func TestGenerateChartBadParameters(t *testing.T) {
	t.Parallel()
	root := chartRepo(t)
	shopParams(t, root, "")
	params := []string{
		`ARGOCD_APP_PARAMETERS={"valueFiles": "x"}`,
		`ARGOCD_APP_PARAMETERS=[{"name":"skipCrds","string":"maybe"}]`,
	}
	// The files are typed; the field (valueFiles[0]) is in the message only.
	msgs := golden.ErrorLines(t, "testdata/chart-parameters.golden", len(params)+1)
	for _, p := range params {
		_, err := generateChart(t, root, p)
		if exitcode.Code(err) != exitcode.Invalid || findingOf(t, err).file != render.EnvAppParameters {
			t.Errorf("%s: got %v", p, err)
			continue
		}
		msgs(p, err)
	}
	shopParams(t, root, "valueFiles: [../../../../../etc/passwd]\n")
	_, err := generateChart(t, root)
	if exitcode.Code(err) != exitcode.Invalid || findingOf(t, err).file != "apps/shop/"+render.HelmParametersFile {
		t.Fatalf("a value file outside the repository: got %v", err)
	}
	if !errors.Is(err, render.ErrOutsideRoot) {
		t.Errorf("a value file outside the repository: not ErrOutsideRoot: %v", err)
	}
	msgs("valueFiles outside the repository", err)
}

// TestChartAppCache: a chart app's render is cached like any other: the
// same files hit, a changed value file or parameters file (read through the
// confined filesystem, so in the trace) misses and renders the change.
func TestChartAppCache(t *testing.T) {
	t.Parallel()
	root := chartRepo(t)
	cache := &cmp.Cache{Dir: t.TempDir()}
	shopParams(t, root, "valueFiles: [values-staging.yaml]\n")
	params := `ARGOCD_APP_PARAMETERS=[{"name":"valueFiles","array":["values-staging.yaml"]}]`
	gen := func() *cmp.Result {
		t.Helper()
		res, err := cmp.Generate(context.Background(), cmp.Options{
			WorkDir: filepath.Join(root, "apps/shop"),
			Env: cmp.EnvFromEnviron([]string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-staging",
				"ARGOCD_APP_SOURCE_PATH=apps/shop", "ARGOCD_ENV_ENVIRONMENT=staging", params}),
			Version: "v0.0.0-test", Cache: cache,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.CacheErr != nil {
			t.Fatal(res.CacheErr)
		}
		return res
	}
	if gen().CacheHit || !gen().CacheHit {
		t.Fatal("the second render of the same chart app must hit the cache, the first must not")
	}
	if err := os.WriteFile(filepath.Join(root, "apps/shop/values-staging.yaml"), []byte("replicaCount: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := gen()
	if res.CacheHit || !strings.Contains(string(res.Manifests), `"replicas":7`) {
		t.Errorf("a changed value file served from the cache (hit %v)", res.CacheHit)
	}
	shopParams(t, root, "valueFiles: [values-staging.yaml]\nparameters: [{name: replicaCount, value: \"8\"}]\n")
	res = gen()
	if res.CacheHit || !strings.Contains(string(res.Manifests), `"replicas":8`) {
		t.Errorf("a changed parameters file served from the cache (hit %v)", res.CacheHit)
	}
}
