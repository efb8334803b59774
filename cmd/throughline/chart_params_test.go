package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// chartAppRepo copies render's golden chart app (apps/shop) into a new
// repository root and adds files (path relative to the root -> content).
func chartAppRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(repoRoot, "render", "testdata", "helm", "repo")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(root, rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel, body := range files {
		if err := writeFile(filepath.Join(root, rel), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// shopParameters is apps/shop's parameters file: what the Application in
// front of it would otherwise say in spec.source.plugin.parameters.
const shopParameters = `apiVersion: throughline.dev/v1alpha1
kind: HelmParameters
releaseName: shop
namespace: shop-staging
valueFiles: [values-staging.yaml]
parameters:
  - {name: replicaCount, value: "4"}
kubeVersion: "1.31.2"
apiVersions: [v1, apps/v1, monitoring.coreos.com/v1]
`

// pluginHash runs `throughline cmp generate` in the app directory with the
// environment argocd-repo-server gives a plugin and returns the
// Acceptance's rendered hash, or the exit code and stderr.
func pluginHash(t *testing.T, root, rel string, env ...string) (string, result) {
	t.Helper()
	for _, kv := range append([]string{
		"ARGOCD_APP_NAME=shop-staging", "ARGOCD_APP_NAMESPACE=shop-staging", "ARGOCD_APP_REVISION=" + strings.Repeat("1", 40),
		"ARGOCD_APP_SOURCE_PATH=" + rel, "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/gitops.git",
		"ARGOCD_ENV_ENVIRONMENT=staging", "KUBE_VERSION=1.33.0", "KUBE_API_VERSIONS=v1,apps/v1",
		"ARGOCD_APP_PARAMETERS=", "THROUGHLINE_CACHE_DIR=" + t.TempDir(),
	}, env...) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(filepath.Join(root, rel))
	r := runCLI(t, "cmp", "generate", "--no-cache")
	if r.code != exitcode.OK {
		return "", r
	}
	docs := strings.Split(r.stdout, "\n---\n")
	var acc struct {
		Kind string `json:"kind"`
		Spec struct {
			RenderedHash string `json:"renderedHash"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(docs[len(docs)-1]), &acc); err != nil || acc.Kind != "Acceptance" {
		t.Fatalf("the plugin's last document is not the Acceptance (%v):\n%s", err, docs[len(docs)-1])
	}
	return acc.Spec.RenderedHash, r
}

// TestChartAppSameHashPluginAndCLI: a chart app's Helm parameters live in
// Git (throughline-helm.yaml beside Chart.yaml), so the plugin and the
// CLI (whose hash every gate computes) render the same objects from the
// same commit whatever the Application says about its name, its cluster's
// versions, or (when they agree with the file) its Helm parameters.
func TestChartAppSameHashPluginAndCLI(t *testing.T) {
	const rel = "apps/shop"
	root := chartAppRepo(t, map[string]string{rel + "/throughline-helm.yaml": shopParameters})
	cli := runCLI(t, "render", "--root", root, "--hash", filepath.Join(root, rel))
	if cli.code != exitcode.OK {
		t.Fatalf("render --hash: exit %d\n%s", cli.code, cli.stderr)
	}
	want := strings.TrimSpace(cli.stdout)
	for _, tc := range []struct{ name, params string }{
		{"no plugin parameters", ""},
		{"plugin parameters that agree with the file", `[{"name":"environment","string":"staging"},` +
			`{"name":"valueFiles","array":["values-staging.yaml"]},{"name":"parameters","map":{"replicaCount":"4"}},` +
			`{"name":"releaseName","string":"shop"},{"name":"namespace","string":"shop-staging"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, r := pluginHash(t, root, rel, "ARGOCD_APP_PARAMETERS="+tc.params)
			if r.code != exitcode.OK {
				t.Fatalf("cmp generate: exit %d\n%s", r.code, r.stderr)
			}
			if got != want {
				t.Errorf("the plugin's rendered hash %s, the CLI's %s: the gates would judge another render", got, want)
			}
		})
	}
	out := runCLI(t, "render", "--root", root, filepath.Join(root, rel))
	for _, s := range []string{"replicas: 4", "hello from staging", "releaseNamespace: shop-staging", "kubeVersion: v1.31.2",
		`hasServiceMonitor: "true"`} {
		if !strings.Contains(out.stdout, s) {
			t.Errorf("the CLI's render does not apply the file: %q missing\n%s", s, out.stdout)
		}
	}
}

// TestChartAppPluginParametersDisagree: a plugin parameter that says
// something else than the file in Git would make the plugin render what no
// gate judged: refused (exit 3, chart-parameters-disagree) naming the
// parameter and the file. So is a destination namespace the file does not
// name, and Helm parameters given to the plugin for a chart app that has
// no file.
func TestChartAppPluginParametersDisagree(t *testing.T) {
	const rel = "apps/shop"
	withFile := chartAppRepo(t, map[string]string{rel + "/throughline-helm.yaml": shopParameters})
	noFile := chartAppRepo(t, nil)
	for _, tc := range []struct {
		name, root string
		env        []string
		want       []string
	}{
		{"another value file", withFile, []string{`ARGOCD_APP_PARAMETERS=[{"name":"valueFiles","array":["values-production.yaml"]}]`},
			[]string{"valueFiles", "apps/shop/throughline-helm.yaml", "values-production.yaml"}},
		{"another --set", withFile, []string{`ARGOCD_APP_PARAMETERS=[{"name":"parameters","map":{"replicaCount":"9"}}]`},
			[]string{"parameters", "apps/shop/throughline-helm.yaml"}},
		{"another release", withFile, []string{`ARGOCD_APP_PARAMETERS=[{"name":"releaseName","string":"other"}]`},
			[]string{"releaseName", "other"}},
		{"another destination namespace", withFile, []string{"ARGOCD_APP_NAMESPACE=shop-production"},
			[]string{"ARGOCD_APP_NAMESPACE", "shop-production", "shop-staging"}},
		{"parameters without a file", noFile, []string{`ARGOCD_APP_PARAMETERS=[{"name":"valueFiles","array":["values-staging.yaml"]}]`},
			[]string{"valueFiles", "apps/shop/throughline-helm.yaml"}},
		{"destination without a file", noFile, nil, []string{"ARGOCD_APP_NAMESPACE", "shop-staging", "apps/shop/throughline-helm.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := pluginHash(t, tc.root, rel, tc.env...)
			if r.code != exitcode.Refused || r.stdout != "" {
				t.Fatalf("cmp generate: exit %d (want 3, nothing on stdout)\n%s", r.code, r.stderr)
			}
			for _, s := range append(tc.want, "chart-parameters-disagree") {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("the refusal does not name %q:\n%s", s, r.stderr)
				}
			}
		})
	}
}
