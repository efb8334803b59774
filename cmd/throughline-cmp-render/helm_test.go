package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// throughlineBeside builds the throughline binary next to throughline-cmp-render,
// as the image ships them: the lean plugin links no Helm (client-go comes
// with Helm's chart packages, see TestLeanImports) and renders charts in a
// child process of that binary (render.Worker.HelmPath).
func throughlineBeside(t *testing.T) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(binary(t)), "throughline")
	if _, err := os.Stat(bin); err == nil {
		return
	}
	cmd := exec.Command(goTool(t), "build", "-trimpath", "-ldflags", "-X main.version="+testVersion, "-o", bin,
		"github.com/throughline-dev/throughline/cmd/throughline")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building throughline: %v\n%s", err, out)
	}
}

// copyTree copies the directory src to a new temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestChartAppThroughThroughline: throughline-cmp-render generate renders a chart
// app (the Helm parameters from its throughline-helm.yaml, which the
// plugin's parameters agree with) in a child process of the throughline
// binary beside it; without that binary it refuses the chart (exit 4)
// instead of rendering it as plain files.
func TestChartAppThroughThroughline(t *testing.T) {
	repo := copyTree(t, "../../render/testdata/helm/repo")
	params := "apiVersion: throughline.dev/v1alpha1\nkind: HelmParameters\nreleaseName: shop\nnamespace: shop-staging\n" +
		"valueFiles: [values-staging.yaml]\nkubeVersion: \"1.31.2\"\n"
	if err := os.WriteFile(filepath.Join(repo, "apps/shop/throughline-helm.yaml"), []byte(params), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+t.TempDir(), "ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-staging",
		"ARGOCD_APP_SOURCE_PATH=apps/shop", "ARGOCD_ENV_ENVIRONMENT=staging", "KUBE_VERSION=1.31.2",
		`ARGOCD_APP_PARAMETERS=[{"name":"valueFiles","array":["values-staging.yaml"]}]`)
	run := func(bin string) (string, string, int) {
		cmd := exec.Command(bin, "generate", "--no-cache", "--log-level", "error")
		cmd.Dir, cmd.Env = filepath.Join(repo, "apps/shop"), env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		return stdout.String(), stderr.String(), code
	}
	throughlineBeside(t)
	out, stderr, code := run(binary(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"name":"shop-shop"`, `"greeting":"hello from staging"`, `"kubeVersion":"v1.31.2"`, `"kind":"Acceptance"`} {
		if !strings.Contains(out, want) {
			t.Errorf("%s not in the output:\n%s", want, out)
		}
	}
	alone := filepath.Join(t.TempDir(), "throughline-cmp-render")
	data, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = run(alone)
	if code != 4 || out != "" || !strings.Contains(stderr, "does not link Helm") || !strings.Contains(stderr, "apps/shop") {
		t.Errorf("without throughline beside it: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestChartSchemaThroughThroughline: a chart app whose values.schema.json
// refers to a server is refused by generate (exit 3, rule
// schema-outside-chart) in the throughline child, with the server never
// asked and its address not echoed.
func TestChartSchemaThroughThroughline(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"description": "AKIA-METADATA"}`))
	}))
	defer srv.Close()
	repo := copyTree(t, "../../render/testdata/helm/repo")
	schema := `{"$schema": "https://json-schema.org/draft-07/schema#", "allOf": [{"$ref": "` + srv.URL + `/x.json"}]}`
	params := "apiVersion: throughline.dev/v1alpha1\nkind: HelmParameters\nreleaseName: shop\nnamespace: shop-staging\n" +
		"valueFiles: [values-staging.yaml]\n"
	for f, body := range map[string]string{"apps/shop/values.schema.json": schema, "apps/shop/throughline-helm.yaml": params} {
		if err := os.WriteFile(filepath.Join(repo, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	throughlineBeside(t)
	cmd := exec.Command(binary(t), "generate", "--no-cache", "--log-level", "error")
	cmd.Dir = filepath.Join(repo, "apps/shop")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-staging",
		"ARGOCD_APP_SOURCE_PATH=apps/shop", "ARGOCD_ENV_ENVIRONMENT=staging")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr.String(), "schema-outside-chart") ||
		!strings.Contains(stderr.String(), "apps/shop/values.schema.json") {
		t.Errorf("generate: %v, want exit 3 (schema-outside-chart) naming apps/shop/values.schema.json\n%s", err, stderr.String())
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema reached the server %d time(s)", n)
	}
	for _, leak := range []string{srv.URL, "127.0.0.1", "AKIA"} {
		if strings.Contains(stdout.String()+stderr.String(), leak) {
			t.Errorf("the output echoes %q:\n%s%s", leak, stdout.String(), stderr.String())
		}
	}
}
