package render_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// gitToken is the CI token a checkout persists in .git/config.
const gitToken = "ghs_PersistedCheckoutToken0123456789"

const gitConfig = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://x-access-token:" + gitToken +
	"@github.com/acme/deploy\n[http]\n\textraheader = AUTHORIZATION: basic " + gitToken + "\n"

// TestGitDirectoryIsNeverRead: no field of a kustomization or a chart app
// reads through a .git directory (or a .git file), at any depth, directly or
// through a symlink: each is refused (exit 4, render.ErrGitDir) naming the
// file and the field, and the token in .git/config appears nowhere. A chart
// at the repository root renders without its .git directory.
func TestGitDirectoryIsNeverRead(t *testing.T) {
	t.Parallel()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: v}\n"
	cases := []struct {
		name  string
		path  string // the app, relative to the root
		files map[string]string
		links map[string]string // link -> target, relative to the root
		want  []string          // in the error; nil: renders
	}{
		{name: "configMapGenerator files", path: ".", files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: leak, files: [.git/config]}]\n"},
			want: []string{"kustomization.yaml", "configMapGenerator", ".git/config"}},
		{name: "configMapGenerator files with a key", path: ".", files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: leak, files: [cfg=.git/config]}]\n"},
			want: []string{"kustomization.yaml", "configMapGenerator", ".git/config"}},
		{name: "configMapGenerator envs", path: ".", files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: leak, envs: [.git/config]}]\n"},
			want: []string{"kustomization.yaml", "configMapGenerator", ".git/config"}},
		{name: "secretGenerator files", path: ".", files: map[string]string{
			"kustomization.yaml": "secretGenerator: [{name: leak, files: [.git/config]}]\n"},
			want: []string{"kustomization.yaml", "secretGenerator", ".git/config"}},
		{name: "a symlink to .git/config", path: ".", files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: leak, files: [x]}]\n"},
			links: map[string]string{"x": ".git/config"}, want: []string{"kustomization.yaml", "configMapGenerator", "x"}},
		{name: "a symlink to .git", path: ".", files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: leak, files: [meta/config]}]\n"},
			links: map[string]string{"meta": ".git"}, want: []string{"kustomization.yaml", "configMapGenerator", "meta/config"}},
		{name: "resources .git", path: ".", files: map[string]string{
			"kustomization.yaml": "resources: [.git]\n"}, want: []string{"kustomization.yaml", "resources", ".git"}},
		{name: "resources .git/config", path: ".", files: map[string]string{
			"kustomization.yaml": "resources: [.git/config]\n"}, want: []string{"kustomization.yaml", "resources", ".git/config"}},
		{name: "patches", path: ".", files: map[string]string{
			"kustomization.yaml": "resources: [cm.yaml]\npatches: [{path: .git/config}]\n", "cm.yaml": cm},
			want: []string{"kustomization.yaml", "patches", ".git/config"}},
		{name: "from an overlay, ../", path: "apps/web", files: map[string]string{
			"apps/web/kustomization.yaml": "configMapGenerator: [{name: leak, files: [../../.git/config]}]\n"},
			want: []string{"apps/web/kustomization.yaml", "configMapGenerator", ".git/config"}},
		{name: "a nested repository's .git", path: ".", files: map[string]string{
			"kustomization.yaml":     "configMapGenerator: [{name: leak, files: [vendor/lib/.git/config]}]\n",
			"vendor/lib/.git/config": gitConfig},
			want: []string{"kustomization.yaml", "configMapGenerator", "vendor/lib/.git/config"}},
		{name: "a .git file", path: ".", files: map[string]string{
			"kustomization.yaml": "configMapGenerator: [{name: leak, files: [sub/.git]}]\n",
			"sub/.git":           "gitdir: ../.git/modules/sub\n" + gitToken + "\n"},
			want: []string{"kustomization.yaml", "configMapGenerator", "sub/.git"}},
		{name: "chart valueFiles", path: "apps/c", files: map[string]string{
			"apps/c/Chart.yaml": hostileChart, "apps/c/templates/cm.yaml": fmt.Sprintf(configMapTpl, "ok"),
			"apps/c/" + render.HelmParametersFile: helmParams("valueFiles: [../../.git/config]\n")},
			want: []string{"valueFiles[0]", ".git/config"}},
		{name: "chart template symlink", path: "apps/c", files: map[string]string{
			"apps/c/Chart.yaml": hostileChart, "apps/c/templates/cm.yaml": fmt.Sprintf(configMapTpl, "ok")},
			links: map[string]string{"apps/c/templates/leak.yaml": "../../../.git/config"},
			want:  []string{"apps/c/templates/leak.yaml", ".git"}},
		{name: "a chart at the root renders without .git", path: ".", files: map[string]string{
			"Chart.yaml": hostileChart, "templates/cm.yaml": fmt.Sprintf(configMapTpl,
				`{{ range $p, $_ := .Files.Glob "**" }}{{ $p }},{{ end }}{{ .Files.Get ".git/config" | b64enc }}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{".git/config": gitConfig, ".git/HEAD": "ref: refs/heads/main\n"}
			for n, b := range tc.files {
				files[n] = b
			}
			root := writeTree(t, files)
			for l, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(l))); err != nil {
					t.Fatal(err)
				}
			}
			objs, err := renderOpts(render.Options{Root: root, Path: filepath.Join(root, tc.path)})
			var text string
			if tc.want == nil {
				if err != nil {
					t.Fatalf("render: %v", err)
				}
				var out bytes.Buffer
				if err := render.EncodeYAML(&out, objs); err != nil {
					t.Fatal(err)
				}
				text = out.String()
				if strings.Contains(text, ".git") {
					t.Errorf("the chart saw .git:\n%s", text)
				}
			} else {
				if exitcode.Code(err) != exitcode.Invalid || !errors.Is(err, render.ErrGitDir) {
					t.Fatalf("got %v (exit %d), want exit 4 wrapping ErrGitDir", err, exitcode.Code(err))
				}
				text = err.Error()
				for _, w := range tc.want {
					if !strings.Contains(text, w) {
						t.Errorf("%q not in: %s", w, text)
					}
				}
			}
			for _, leak := range []string{gitToken, "x-access-token", "AUTHORIZATION", root} {
				if strings.Contains(text, leak) {
					t.Errorf("%q in: %s", leak, text)
				}
			}
		})
	}
}
