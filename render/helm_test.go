package render_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/render/helmrender"
)

// The package's tests render charts in-process with Helm's SDK, as the
// throughline binary does (it registers the same engine).
func init() { render.UseHelm(helmrender.Engine{}) }

// TestHelmGolden renders every testdata/helm/<case> (the repository
// testdata/helm/repo at the path in <case>/path, with the plugin parameters
// of <case>/params.json for a chart app) and compares the objects and the
// hash with expected.yaml and expected.hash.
func TestHelmGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata/helm")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name() == "repo" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join("testdata/helm", c.Name())
			rel, err := os.ReadFile(filepath.Join(dir, "path"))
			if err != nil {
				t.Fatal(err)
			}
			var helm render.HelmOptions
			if params, err := os.ReadFile(filepath.Join(dir, "params.json")); err == nil {
				if helm, err = render.ParseHelmParameters(params); err != nil {
					t.Fatal(err)
				}
			}
			objs := buildOpts(t, render.Options{Root: "testdata/helm/repo", Path: strings.TrimSpace(string(rel)), Helm: helm})
			var got bytes.Buffer
			if err := render.EncodeYAML(&got, objs); err != nil {
				t.Fatal(err)
			}
			hash, err := render.Hash(objs)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join(dir, "expected.yaml"), got.String())
			compareGolden(t, filepath.Join(dir, "expected.hash"), hash+"\n")
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
