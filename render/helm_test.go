package render_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/render/helmrender"
)

// The package's tests render charts in-process with Helm's SDK, as the
// throughline binary does (it registers the same engine).
func init() { render.UseHelm(helmrender.Engine{}) }

// TestHelmGolden renders every testdata/helm/<case> (the repository
// testdata/helm/repo at the path in <case>/path, for a chart app with
// <case>/throughline-helm.yaml as its parameters file) and compares the
// objects and the hash with expected.yaml and expected.hash.
func TestHelmGolden(t *testing.T) {
	t.Parallel()
	cases, err := os.ReadDir("testdata/helm")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name() == "repo" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata/helm", c.Name())
			rel, err := os.ReadFile(filepath.Join(dir, "path"))
			if err != nil {
				t.Fatal(err)
			}
			path := strings.TrimSpace(string(rel))
			root := "testdata/helm/repo"
			if params, err := os.ReadFile(filepath.Join(dir, render.HelmParametersFile)); err == nil {
				root = withHelmParameters(t, root, path, string(params))
			}
			objs := buildOpts(t, render.Options{Root: root, Path: path})
			var got bytes.Buffer
			if err := render.EncodeYAML(&got, objs); err != nil {
				t.Fatal(err)
			}
			hash, err := render.Hash(objs)
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.ToSlash(filepath.Join(dir, "expected.yaml")), got.Bytes())
			golden.Compare(t, filepath.ToSlash(filepath.Join(dir, "expected.hash")), []byte(hash+"\n"))
		})
	}
}

func buildOpts(t *testing.T, opts render.Options) []render.Object {
	t.Helper()
	objs, err := renderOpts(opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

func renderOpts(opts render.Options) ([]render.Object, error) {
	app, err := render.Open(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	return app.Build(context.Background())
}

// withHelmParameters is a copy of the repository src with params as the
// parameters file of the chart app at path.
func withHelmParameters(t *testing.T, src, path, params string) string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(src, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files[path+"/"+render.HelmParametersFile] = params
	return writeTree(t, files)
}

// helmParams is a parameters file with body after its apiVersion and kind.
func helmParams(body string) string {
	return "apiVersion: " + render.HelmParametersAPIVersion + "\nkind: " + render.HelmParametersKind + "\n" + body
}
