package render_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/hostile"
	"github.com/throughline-dev/throughline/render"
)

// TestParseHelmParametersFile: the parameters file is decoded strictly, as
// a careless or hostile contributor would break it; each failure is exit 4
// naming the file and the field.
func TestParseHelmParametersFile(t *testing.T) {
	t.Parallel()
	const file = "apps/shop/" + render.HelmParametersFile
	cases := []struct {
		name, data string
		bad        bool // an error (its message in testdata/helm-parameters.golden); false: parses
	}{
		{"every field", helmParams(`releaseName: shop
namespace: shop-staging
valueFiles: [values-staging.yaml]
values: {image: {digest: "sha256:1"}}
parameters: [{name: replicaCount, value: "3"}, {name: greeting, value: "007", forceString: true}]
kubeVersion: "1.31.2"
apiVersions: [v1]
skipCrds: true
skipTests: false
`), false},
		{"values as a YAML string", helmParams("values: |\n  a: 1\n"), false},
		{"empty", "", true},
		{"wrong kind", "apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\n", true},
		{"unknown field", helmParams("valueFile: [a.yaml]\n"), true},
		{"duplicate key", helmParams("releaseName: a\nreleaseName: b\n"), true},
		{"a list", "- a\n", true},
		{"release name not a string", helmParams("releaseName: [a]\n"), true},
		{"release name Helm refuses", helmParams("releaseName: Shop_1\n"), true},
		{"release name too long", helmParams("releaseName: " + strings.Repeat("a", 54) + "\n"), true},
		{"namespace not a label", helmParams("namespace: shop.staging\n"), true},
		{"valueFiles a string", helmParams("valueFiles: a.yaml\n"), true},
		{"valueFiles empty entry", helmParams("valueFiles: [a.yaml, \"\"]\n"), true},
		{"parameter value a number", helmParams("parameters: [{name: a, value: 3}]\n"), true},
		{"parameter without a name", helmParams("parameters: [{value: \"3\"}]\n"), true},
		{"parameter with an unknown field", helmParams("parameters: [{name: a, value: b, force: true}]\n"), true},
		{"parameters a map", helmParams("parameters: {a: b}\n"), true},
		{"skipCrds a string", helmParams("skipCrds: \"yes\"\n"), true},
		{"values a list", helmParams("values: [a]\n"), true},
		{"values string not a mapping", helmParams("values: \"- a\"\n"), true},
		{"alias bomb", helmParams("values:\n" + indent(hostile.AliasBomb(9, 7))), true},
		{"too large", helmParams("values: |\n  a: " + strings.Repeat("x", render.MaxHelmParametersFileSize) + "\n"), true},
		{"too many entries", helmParams("apiVersions: [" + strings.Repeat("v1, ", render.MaxHelmParameterEntries) + "v1]\n"), true},
		{"two documents", helmParams("releaseName: a\n---\nreleaseName: b\n"), true},
	}
	msgs := golden.ErrorLines(t, "testdata/helm-parameters.golden", 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts, err := render.ParseHelmParametersFile(file, []byte(tc.data))
			if !tc.bad {
				if err != nil {
					t.Fatal(err)
				}
				if opts.From != file || len(opts.Given) == 0 {
					t.Errorf("From %q, Given %v", opts.From, opts.Given)
				}
				return
			}
			var inv *exitcode.InvalidInput
			if !errors.As(err, &inv) || inv.File != file || exitcode.Code(err) != exitcode.Invalid {
				t.Fatalf("got %v, want exit 4 naming %s", err, file)
			}
			msgs(tc.name, err)
		})
	}
}

// TestHelmParametersFileConfined: the file is read through the render's
// confined filesystem: a symlink out of the repository is exit 4 naming it,
// never followed; it is no chart file (.Files) and no manifest of a plain
// directory.
func TestHelmParametersFileConfined(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(outside, []byte(helmParams("releaseName: stolen\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	root := writeTree(t, map[string]string{
		"app/Chart.yaml":                     hostileChart,
		"app/templates/cm.yaml":              fmt.Sprintf(configMapTpl, `{{ .Files.Get "throughline-helm.yaml" | printf "%q" }}`),
		"plain/cm.yaml":                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"plain/" + render.HelmParametersFile: helmParams("releaseName: a\n"),
	})
	if err := os.Symlink(outside, filepath.Join(root, "app", render.HelmParametersFile)); err != nil {
		t.Fatal(err)
	}
	_, err := renderOpts(render.Options{Root: root, Path: "app"})
	if exitcode.Code(err) != exitcode.Invalid || invalidFile(t, err) != "app/"+render.HelmParametersFile ||
		strings.Contains(err.Error(), "stolen") || strings.Contains(err.Error(), outside) {
		t.Fatalf("a parameters file linked out of the repository: %v", err)
	}
	if err := os.Remove(filepath.Join(root, "app", render.HelmParametersFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "app", render.HelmParametersFile), []byte(helmParams("releaseName: r\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := renderOpts(render.Options{Root: root, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if v := objs[0].Map["data"].(map[string]any)["v"]; v != "" {
		t.Errorf("the parameters file is one of the chart's files: %q", v)
	}
	objs, err = renderOpts(render.Options{Root: root, Path: "plain"})
	if err != nil || len(objs) != 1 {
		t.Errorf("a plain directory renders its parameters file as a manifest: %d objects, %v", len(objs), err)
	}
}

// FuzzHelmParametersFile: the parameters file is whatever a contributor
// committed. ParseHelmParametersFile returns the options or an
// *exitcode.InvalidInput naming the file, never panics; every --set
// parameter it returns has a name and every field it says is given is one
// of the file's.
func FuzzHelmParametersFile(f *testing.F) {
	for _, s := range []string{
		"", "{}", "null", "- a", helmParams(""), helmParams("releaseName: shop\nnamespace: shop-staging\nvalueFiles: [a.yaml, ../b.yaml]\n"),
		helmParams("values: {a: [1, 2]}\nparameters: [{name: a.b, value: c, forceString: true}]\n"),
		helmParams("values: \"a: &x [1]\\nb: *x\\n\"\nskipCrds: true\nskipTests: false\nkubeVersion: v1.31.0\napiVersions: [v1]\n"),
		helmParams("parameters: [{name: \"\", value: x}]\n"), helmParams("releaseName: a\nreleaseName: b\n"),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "app/" + render.HelmParametersFile
		opts, err := render.ParseHelmParametersFile(file, data)
		if err != nil {
			var inv *exitcode.InvalidInput
			if !errors.As(err, &inv) || inv.File != file {
				t.Fatalf("error %v is not invalid input naming %s", err, file)
			}
			return
		}
		for _, p := range opts.Parameters {
			if strings.TrimSpace(p.Name) == "" {
				t.Fatalf("parameter without a name: %+v", opts.Parameters)
			}
		}
		for _, g := range opts.Given {
			if !strings.Contains(string(data), g) {
				t.Fatalf("given %q is not in the file", g)
			}
		}
	})
}
