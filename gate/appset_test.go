package gate

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/internal/golden"
)

// TestApplicationSetApplications: the template parameters of the list and
// Git directory generators as Argo CD's ApplicationSet controller renders
// them (e2e/applicationset compares with the real controller), and every
// ApplicationSet whose output the repository does not determine refused
// naming why.
func TestApplicationSetApplications(t *testing.T) {
	t.Parallel()
	dirs := []string{"gitops", "gitops/apps", "gitops/apps/checkout", "gitops/apps/checkout/overlays", "gitops/apps/checkout/overlays/production",
		"gitops/apps/my_app", "gitops/apps/my_app/overlays", "gitops/apps/my_app/overlays/production", "gitops/apps/legacy/overlays/production"}
	const tmpl = `
  template:
    metadata: {name: '{{name}}'}
    spec:
      source: {path: '{{path}}', repoURL: 'https://git.example.test/gitops.git'}
      destination: {namespace: '{{ ns }}-x', name: '{{unknown}}'}
`
	for _, tc := range []struct {
		name, appset string
		want         []string // name path namespace of each Application
		// refused: no Applications, an error (its wording in the golden file)
		refused bool
	}{
		{"list", `
  generators:
    - list:
        elements:
          - {name: a, path: apps/a, ns: a}
          - {name: b, path: apps/b, ns: 7}
` + tmpl, []string{"a apps/a a-x {{unknown}}", "b apps/b 7-x {{unknown}}"}, false},
		{"git directories, one excluded", `
  generators:
    - git:
        repoURL: https://git.example.test/gitops.git
        revision: main
        directories:
          - path: gitops/apps/*/overlays/production
          - path: gitops/apps/legacy/overlays/production
            exclude: true
  template:
    metadata: {name: '{{path.basenameNormalized}}-{{path[2]}}'}
    spec:
      source: {path: '{{path}}'}
      destination: {namespace: '{{path.basename}}', name: '{{path[2]}}'}
`, []string{"production-checkout gitops/apps/checkout/overlays/production production checkout",
			"production-my_app gitops/apps/my_app/overlays/production production my_app"}, false},
		{"basename normalized", `
  generators:
    - git:
        repoURL: https://git.example.test/gitops.git
        directories: [{path: gitops/apps/*}]
  template:
    metadata: {name: '{{path.basenameNormalized}}'}
    spec: {source: {path: '{{path}}'}, destination: {namespace: x, name: z}}
`, []string{"checkout gitops/apps/checkout x z", "my-app gitops/apps/my_app x z"}, false},
		{"Go template", "  goTemplate: true\n  generators: [{list: {elements: [{a: b}]}}]\n" + tmpl, nil, true},
		{"template patch", "  templatePatch: x\n  generators: [{list: {elements: [{a: b}]}}]\n" + tmpl, nil, true},
		{"matrix", "  generators: [{matrix: {generators: []}}]\n" + tmpl, nil, true},
		{"clusters", "  generators: [{clusters: {}}]\n" + tmpl, nil, true},
		{"git files", "  generators: [{git: {repoURL: https://git.example.test/gitops.git, files: [{path: x.json}]}}]\n" + tmpl, nil, true},
		{"another repository", "  generators: [{git: {repoURL: https://git.example.test/other.git, directories: [{path: '*'}]}}]\n" + tmpl, nil,
			true},
		{"nested list value", "  generators: [{list: {elements: [{a: {b: c}}]}}]\n" + tmpl, nil, true},
		{"elementsYaml", "  generators: [{list: {elementsYaml: x}}]\n" + tmpl, nil, true},
		{"no generators", "  generators: []\n" + tmpl, nil, true},
		{"two kinds in one entry", "  generators: [{list: {elements: []}, clusters: {}}]\n" + tmpl, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var obj map[string]any
			if err := yaml.Unmarshal([]byte("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\nspec:\n"+tc.appset), &obj); err != nil {
				t.Fatal(err)
			}
			apps, err := ApplicationSetApplications(obj, dirs, []string{"https://git.example.test/gitops"})
			if tc.refused {
				if err == nil || apps != nil {
					t.Fatalf("%d Applications, error %v: want it refused", len(apps), err)
				}
				golden.Compare(t, "testdata/"+t.Name()+".golden", []byte(err.Error()+"\n"))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range apps {
				var app struct {
					Kind     string `json:"kind"`
					Metadata struct{ Name string }
					Spec     struct {
						Source      struct{ Path string }
						Destination struct{ Namespace, Name string }
					}
				}
				b, _ := json.Marshal(a)
				if err := json.Unmarshal(b, &app); err != nil {
					t.Fatal(err)
				}
				if app.Kind != "Application" {
					t.Fatalf("kind %q", app.Kind)
				}
				got = append(got, strings.Join([]string{app.Metadata.Name, app.Spec.Source.Path, app.Spec.Destination.Namespace, app.Spec.Destination.Name}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
