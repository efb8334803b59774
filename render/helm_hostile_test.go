package render_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/hostile"
	"github.com/throughline-dev/throughline/render"
)

// chartTgz packs files (paths inside the archive, as written) into a chart
// package, as `helm package` would.
func chartTgz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// testCharts is a ChartSource serving packages built by the test. The real
// one is package chartsource's (lock file, digest verification, cache),
// tested there against real registries; this one only records what the
// render asked for.
type testCharts struct {
	mu       sync.Mutex
	packages map[render.ChartRef][]byte
	asked    []string
}

func (s *testCharts) Chart(_ context.Context, _ render.ChartFiles, dir string, ref render.ChartRef) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, dir+" "+ref.Repo+" "+ref.Name+" "+ref.Version)
	if data, ok := s.packages[ref]; ok {
		return data, nil
	}
	return nil, &exitcode.Refusal{Rule: render.RuleUnpinnedChart, Reason: fmt.Sprintf("%s %s is not in the lock file", ref.Name, ref.Version)}
}

const (
	hostileChart = "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	configMapTpl = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  v: %s\n"
)

// TestChartAppAttacks: every way a hostile contributor can make a chart
// app read outside the repository, reach the cluster or the environment,
// or blow up the render is refused with exit 4 naming the file (or
// rendered harmlessly, and the output shows it).
func TestChartAppAttacks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.yaml")
	if err := os.WriteFile(secret, []byte("stolen: root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	depTgz := chartTgz(t, map[string]string{
		"dep/Chart.yaml": "apiVersion: v2\nname: dep\nversion: 1.0.0\n", "dep/../../../evil.yaml": "x: y\n",
	})
	var zeros bytes.Buffer
	gz := gzip.NewWriter(&zeros)
	tw := tar.NewWriter(gz)
	_ = tw.WriteHeader(&tar.Header{Name: "bomb/templates/zeros.yaml", Mode: 0o644, Size: 200 << 20, Typeflag: tar.TypeReg})
	chunk := make([]byte, 1<<20)
	for range 200 {
		_, _ = tw.Write(chunk)
	}
	_ = tw.Close()
	_ = gz.Close()
	cases := []struct {
		name    string
		files   map[string]string
		links   map[string]string // app-relative link -> target
		params  string            // the body of the app's parameters file
		maxFile int64
		code    int      // 0: renders
		want    []string // in the error, or in the output when it renders
	}{
		{name: "valueFiles ../ out of the root", params: "valueFiles: [../../../../../../../../etc/passwd]",
			code: exitcode.Invalid, want: []string{"valueFiles[0]", render.ErrOutsideRoot.Error()}},
		{name: "valueFiles absolute", params: "valueFiles: [/etc/passwd]",
			code: exitcode.Invalid, want: []string{"valueFiles[0]", "absolute"}},
		{name: "valueFiles URL", params: "valueFiles: [\"https://values.example.test/v.yaml\"]",
			code: exitcode.Invalid, want: []string{"valueFiles[0]", "only from the repository"}},
		{name: "valueFiles symlink out", links: map[string]string{"evil.yaml": secret},
			params: "valueFiles: [evil.yaml]", code: exitcode.Invalid, want: []string{"app/evil.yaml", "outside"}},
		{name: "template symlink out", links: map[string]string{"templates/leak.yaml": secret},
			code: exitcode.Invalid, want: []string{"app/templates/leak.yaml", "outside"}},
		{name: "charts directory symlink out", links: map[string]string{"charts": outside},
			code: exitcode.Invalid, want: []string{"app/charts", "outside"}},
		{name: "symlink loop", links: map[string]string{"templates/loop": "."},
			code: exitcode.Invalid, want: []string{"app/templates/loop", "deeper"}},
		{name: "Files.Get ../", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl,
			`{{ .Files.Get "../../../../../../etc/passwd" | printf "%q" }}`)}, want: []string{`v: ""`}},
		{name: "lookup returns nothing", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl,
			`{{ if lookup "v1" "Secret" "kube-system" "" }}found{{ else }}none{{ end }}`)}, want: []string{"v: none"}},
		{name: "getHostByName returns nothing", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl,
			`{{ getHostByName "localhost" | printf "%q" }}`)}, want: []string{`v: ""`}},
		{name: "env", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl, `{{ env "HOME" }}`)},
			code: exitcode.Invalid, want: []string{"app/templates/cm.yaml", `"env" not defined`}},
		{name: "expandenv", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl, `{{ expandenv "$HOME" }}`)},
			code: exitcode.Invalid, want: []string{"app/templates/cm.yaml", `"expandenv" not defined`}},
		{name: "repeat bomb", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl, `{{ repeat 2000000000 "xx" }}`)},
			code: exitcode.Invalid, want: []string{"app/templates/cm.yaml", "repeat"}},
		{name: "until bomb", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl,
			`"{{ range until 1000000000 }}x{{ end }}"`)}, code: exitcode.Invalid, want: []string{"app/templates/cm.yaml", "list"}},
		{name: "seq bomb", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl, `"{{ seq 1 1000000000 }}"`)},
			code: exitcode.Invalid, want: []string{"app/templates/cm.yaml", "list"}},
		{name: "template over the size cap", maxFile: 4096, files: map[string]string{"templates/big.yaml": "# " + strings.Repeat("x", 5000)},
			code: exitcode.Invalid, want: []string{"app/templates/big.yaml", "size limit"}},
		{name: "alias bomb in the output", files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n" +
			"metadata: {name: cm}\nbomb:\n" + indent(hostile.AliasBomb(9, 7))}, code: exitcode.Invalid, want: []string{"app/templates/cm.yaml", "alias"}},
		{name: "alias bomb in a values file", files: map[string]string{"bomb.yaml": hostile.AliasBomb(9, 7)},
			params: "valueFiles: [bomb.yaml]", code: exitcode.Invalid, want: []string{"app/bomb.yaml", "alias"}},
		{name: "template error", files: map[string]string{"templates/cm.yaml": fmt.Sprintf(configMapTpl, `{{ fail "no database configured" }}`)},
			code: exitcode.Invalid, want: []string{"app/templates/cm.yaml", "no database configured"}},
		{name: "values schema violation", files: map[string]string{
			"values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
			"values-bad.yaml":    "replicas: two\n"},
			params: "valueFiles: [values-bad.yaml]", code: exitcode.Invalid, want: []string{"app/values.schema.json", "replicas"}},
		{name: "missing dependency", files: map[string]string{"Chart.yaml": hostileChart + "dependencies: [{name: dep, version: 1.0.0}]\n"},
			code: exitcode.Invalid, want: []string{"app/Chart.yaml", "missing in charts/"}},
		{name: "unpinned remote dependency", files: map[string]string{"Chart.yaml": hostileChart +
			"dependencies: [{name: dep, version: 1.0.0, repository: \"oci://registry.example.test/charts\"}]\n"},
			code: exitcode.Refused, want: []string{"app/Chart.yaml", "dependencies[0].repository", "not pinned"}},
		{name: "remote dependency with a version range", files: map[string]string{"Chart.yaml": hostileChart +
			"dependencies: [{name: dep, version: \"~1.0.0\", repository: \"oci://registry.example.test/charts\"}]\n"},
			code: exitcode.Refused, want: []string{"app/Chart.yaml", "dependencies[0].version", "ranges float"}},
		{name: "dependency from a git repository", files: map[string]string{"Chart.yaml": hostileChart +
			"dependencies: [{name: dep, version: 1.0.0, repository: \"git::https://git.example.test/charts\"}]\n"},
			code: exitcode.Invalid, want: []string{"app/Chart.yaml", "dependencies[0].repository"}},
		{name: "vendored package with paths escaping the archive", files: map[string]string{"charts/dep-1.0.0.tgz": string(depTgz)},
			code: exitcode.Invalid, want: []string{"app/Chart.yaml", "illegally references parent directory"}},
		{name: "compressed bomb in charts/", files: map[string]string{"charts/bomb-1.0.0.tgz": zeros.String()},
			code: exitcode.Invalid, want: []string{"app/charts/bomb-1.0.0.tgz", "unpacks to more than"}},
		{name: "bad parameter", params: "parameters: [{name: \"list[x]\", value: b}]",
			code: exitcode.Invalid, want: []string{"app/" + render.HelmParametersFile, "list[x]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{
				"app/Chart.yaml":        hostileChart,
				"app/templates/cm.yaml": fmt.Sprintf(configMapTpl, "ok"),
			}
			for n, b := range tc.files {
				files["app/"+n] = b
			}
			if tc.params != "" {
				files["app/"+render.HelmParametersFile] = helmParams(tc.params + "\n")
			}
			root := writeTree(t, files)
			for l, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(root, "app", l)); err != nil {
					t.Fatal(err)
				}
			}
			objs, err := renderOpts(render.Options{Root: root, Path: "app", MaxFileSize: tc.maxFile})
			if got := exitcode.Code(err); got != tc.code {
				t.Fatalf("exit %d, want %d: %v", got, tc.code, err)
			}
			text := ""
			if err != nil {
				text = err.Error()
				if strings.Contains(text, root) || strings.Contains(text, outside) {
					t.Errorf("the error names a machine path: %v", err)
				}
			} else {
				var out bytes.Buffer
				if err := render.EncodeYAML(&out, objs); err != nil {
					t.Fatal(err)
				}
				text = out.String()
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q not in:\n%s", w, text)
				}
			}
			if strings.Contains(text, "root:x") || strings.Contains(text, "stolen") {
				t.Errorf("the render read outside the repository:\n%s", text)
			}
		})
	}
}

// TestRemoteChartsComeFromTheChartSource: a chart app's dependency and a
// helmCharts entry with a repo render from the packages the ChartSource
// gives, asked for with the directory of the file that names them; with no
// ChartSource, or one that does not pin the chart, they are refused (exit
// 3, rule unpinned-chart) naming the file and the field.
func TestRemoteChartsComeFromTheChartSource(t *testing.T) {
	t.Parallel()
	dep := chartTgz(t, map[string]string{
		"dep/Chart.yaml":          "apiVersion: v2\nname: dep\nversion: 1.0.0\n",
		"dep/templates/sa.yaml":   "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: from-dep}\n",
		"dep/templates/NOTES.txt": "hi\n",
	})
	web := chartTgz(t, map[string]string{
		"web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 2.0.0\n",
		"web/values.yaml": "replicas: 1\n",
		"web/templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ .Release.Name }}}\n" +
			"spec: {replicas: {{ .Values.replicas }}}\n",
	})
	files := map[string]string{
		"apps/shop/Chart.yaml":        hostileChart + "dependencies: [{name: dep, version: 1.0.0, repository: \"oci://registry.example.test/charts\"}]\n",
		"apps/shop/templates/cm.yaml": fmt.Sprintf(configMapTpl, "ok"),
		"apps/web/base/kustomization.yaml": "helmCharts:\n- {name: web, version: 2.0.0, repo: \"https://charts.example.test/stable\", " +
			"releaseName: front, valuesInline: {replicas: 4}}\n",
		"apps/web/staging/kustomization.yaml": "namespace: web-staging\nresources: [../base]\n" +
			"patches: [{path: patch.yaml}]\n",
		"apps/web/staging/patch.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: front, labels: {patched: \"yes\"}}\n",
	}
	root := writeTree(t, files)
	src := &testCharts{packages: map[render.ChartRef][]byte{
		{Repo: "oci://registry.example.test/charts", Name: "dep", Version: "1.0.0"}: dep,
		{Repo: "https://charts.example.test/stable", Name: "web", Version: "2.0.0"}: web,
	}}
	for _, tc := range []struct {
		path, want, asked, file, field string
	}{
		{"apps/shop", "name: from-dep", "apps/shop oci://registry.example.test/charts dep 1.0.0",
			"apps/shop/Chart.yaml", "dependencies[0].repository"},
		{"apps/web/staging", "replicas: 4", "apps/web/base https://charts.example.test/stable web 2.0.0",
			"apps/web/base/kustomization.yaml", "helmCharts[0].repo"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			src.asked = nil
			objs, err := renderOpts(render.Options{Root: root, Path: tc.path, Charts: src})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := render.EncodeYAML(&out, objs); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("%q not in:\n%s", tc.want, out.String())
			}
			if tc.path == "apps/web/staging" && (!strings.Contains(out.String(), "patched") || !strings.Contains(out.String(), "web-staging")) {
				t.Errorf("the overlay did not patch the chart's output:\n%s", out.String())
			}
			if len(src.asked) != 1 || src.asked[0] != tc.asked {
				t.Errorf("asked the chart source %q, want [%q]", src.asked, tc.asked)
			}
			for _, charts := range []render.ChartSource{nil, &testCharts{}} {
				_, err := renderOpts(render.Options{Root: root, Path: tc.path, Charts: charts})
				var r *exitcode.Refusal
				if !errors.As(err, &r) || r.Rule != render.RuleUnpinnedChart || r.File != tc.file || r.Field != tc.field {
					t.Errorf("charts %T: got %v, want an unpinned-chart refusal naming %s and %s", charts, err, tc.file, tc.field)
				}
			}
		})
	}
}

// TestChartSecretValuesNeverInErrors: a Secret a chart renders is redacted
// from the messages of what fails after it, as a Secret the render reads:
// here kustomize's identity clash with a Secret of the kustomization, whose
// message dumps both objects.
func TestChartSecretValuesNeverInErrors(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml":  "resources: [s.yaml]\nhelmCharts: [{name: c, version: 0.1.0}]\n",
		"app/s.yaml":              "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: the-repository-one}\n",
		"app/charts/c/Chart.yaml": hostileChart,
		"app/charts/c/templates/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n" +
			"stringData: {password: chart-rendered-hunter2}\n",
	})
	_, err := renderOpts(render.Options{Root: root, Path: "app"})
	if err == nil {
		t.Fatal("two Secrets with one identity rendered")
	}
	if strings.Contains(err.Error(), "chart-rendered-hunter2") || strings.Contains(err.Error(), "the-repository-one") {
		t.Errorf("a Secret value is in the message: %v", err)
	}
}
