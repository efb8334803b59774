package render_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/hostile"
	"github.com/throughline-dev/throughline/render"
)

// bombPositions are the files krusty (or the plain-manifest reader) parses,
// each holding the bomb in place of ordinary content. want is the file the
// error must name.
func bombPositions(bomb string) []struct {
	name  string
	files map[string]string
	want  string
} {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"
	bombCM := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\nbomb:\n" + indent(bomb)
	return []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"resources file", map[string]string{
			"app/kustomization.yaml": "resources: [bomb.yaml]\n", "app/bomb.yaml": bombCM,
		}, "app/bomb.yaml"},
		{"resource of a base", map[string]string{
			"app/kustomization.yaml":  "resources: [../base]\n",
			"base/kustomization.yaml": "resources: [bomb.yaml]\n", "base/bomb.yaml": bombCM,
		}, "base/bomb.yaml"},
		{"resource of a component", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\ncomponents: [../comp]\n", "app/cm.yaml": cm,
			"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [bomb.yaml]\n",
			"comp/bomb.yaml":          bombCM,
		}, "comp/bomb.yaml"},
		{"patches path", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatches: [{path: bomb.yaml}]\n", "app/cm.yaml": cm, "app/bomb.yaml": bombCM,
		}, "app/bomb.yaml"},
		{"patchesStrategicMerge", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatchesStrategicMerge: [bomb.yaml]\n", "app/cm.yaml": cm, "app/bomb.yaml": bombCM,
		}, "app/bomb.yaml"},
		{"patchesJson6902 path", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatchesJson6902: [{target: {version: v1, kind: ConfigMap, name: cm}, path: bomb.yaml}]\n",
			"app/cm.yaml":            cm, "app/bomb.yaml": "- op: add\n  path: /bomb\n  value:\n" + indent(indent(bomb)),
		}, "app/bomb.yaml"},
		{"inline patch", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- patch: |-\n" + indent(indent(bombCM)),
			"app/cm.yaml":            cm,
		}, "app/kustomization.yaml"},
		{"configMapGenerator files", map[string]string{
			"app/kustomization.yaml": "configMapGenerator: [{name: g, files: [bomb.yaml]}]\n", "app/bomb.yaml": bomb,
		}, "app/bomb.yaml"},
		{"secretGenerator envs", map[string]string{
			"app/kustomization.yaml": "secretGenerator: [{name: g, envs: [bomb.env]}]\n", "app/bomb.env": bomb,
		}, "app/bomb.env"},
		{"configurations", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\nconfigurations: [bomb.yaml]\n", "app/cm.yaml": cm,
			"app/bomb.yaml": "bomb:\n" + indent(bomb),
		}, "app/bomb.yaml"},
		{"crds", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\ncrds: [bomb.yaml]\n", "app/cm.yaml": cm,
			"app/bomb.yaml": "bomb:\n" + indent(bomb),
		}, "app/bomb.yaml"},
		{"replacements path", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\nreplacements: [{path: bomb.yaml}]\n", "app/cm.yaml": cm,
			"app/bomb.yaml": "source: {kind: ConfigMap, name: cm, fieldPath: data.a}\nbomb:\n" + indent(bomb),
		}, "app/bomb.yaml"},
		{"openapi path", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\nopenapi: {path: bomb.yaml}\n", "app/cm.yaml": cm,
			"app/bomb.yaml": "bomb:\n" + indent(bomb),
		}, "app/bomb.yaml"},
		{"transformers file", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [bomb.yaml]\n", "app/cm.yaml": cm,
			"app/bomb.yaml": "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: l}\nlabels: {a: b}\nfieldSpecs: [{path: metadata/labels, create: true}]\nbomb:\n" +
				indent(bomb),
		}, "app/bomb.yaml"},
		{"kustomization itself", map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\nbomb:\n" + indent(bomb), "app/cm.yaml": cm,
		}, "app/kustomization.yaml"},
		{"plain manifests", map[string]string{
			"app/cm.yaml": cm, "app/bomb.yaml": bombCM,
		}, "app/bomb.yaml"},
	}
}

// TestAliasBombsAreRefused puts a YAML alias bomb in every position krusty
// (or the plain-manifest reader) parses. Each must end as invalid input
// naming the file, refused by the parsing limits, with a bounded allocation
// (no wall-clock assertion: the benchmarks measure time).
func TestAliasBombsAreRefused(t *testing.T) {
	for _, size := range []struct {
		name          string
		width, levels int
	}{{"9x7", 9, 7}, {"9x10", 9, 10}} {
		for _, tc := range bombPositions(hostile.AliasBomb(size.width, size.levels)) {
			t.Run(size.name+"/"+tc.name, func(t *testing.T) {
				root := writeTree(t, tc.files)
				ctx := context.Background()
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				app, err := render.Open(ctx, render.Options{Root: root, Path: "app"})
				if err == nil {
					_, err = app.Build(ctx)
				}
				runtime.ReadMemStats(&after)
				if err == nil {
					t.Fatal("rendered an alias bomb without error")
				}
				t.Logf("error: %v", err)
				if !errors.Is(err, exitcode.ErrInvalid) || !errors.Is(err, render.ErrYAMLLimit) {
					t.Errorf("want an invalid-input error wrapping ErrYAMLLimit, got %T %v", err, err)
				}
				if invalidFile(t, err) != tc.want {
					t.Errorf("error does not name %s: %v", tc.want, err)
				}
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
					t.Errorf("allocated %d MiB refusing the bomb; want < 64 MiB", alloc>>20)
				}
			})
		}
	}
}

// TestAliasBudgetIsPerRender: many files, each under the cap, together over
// it are refused (one file's cap would let a kustomization list a thousand
// small bombs).
func TestAliasBudgetIsPerRender(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	var res []string
	perFile := "a: &a [" + strings.TrimSuffix(strings.Repeat("x,", 99), ",") + "]\nb: [" + strings.TrimSuffix(strings.Repeat("*a,", 10), ",") + "]\n"
	for i := range render.MaxYAMLAliasNodes/1000 + 1 {
		name := fmt.Sprintf("cm%03d.yaml", i)
		res = append(res, name)
		files["app/"+name] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%03d}\nbomb:\n", i) + indent(perFile)
		if err := render.CheckYAML([]byte(files["app/"+name])); err != nil {
			t.Fatalf("one file is refused: %v", err)
		}
	}
	files["app/kustomization.yaml"] = "resources: [" + strings.Join(res, ", ") + "]\n"
	root := writeTree(t, files)
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
	if err == nil {
		_, err = app.Build(context.Background())
	}
	if !errors.Is(err, render.ErrYAMLLimit) || !errors.Is(err, exitcode.ErrInvalid) {
		t.Fatalf("want ErrYAMLLimit, got %v", err)
	}
	t.Logf("error: %v", err)
}

// TestAliasesWithinLimitsRender: anchors and aliases an author writes by
// hand (shared labels, a merged mapping) still render.
func TestAliasesWithinLimitsRender(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\n",
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: &l {app: web, tier: front}\n" +
			"  annotations: *l\ndata:\n  base: &b {x: \"1\"}\n  <<: *b\n",
		"plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: &l {app: web}\n  annotations: *l\n",
	}
	root := writeTree(t, files)
	for _, path := range []string{"app", "plain"} {
		objs := build(t, root, path)
		if len(objs) != 1 {
			t.Fatalf("%s: %d objects", path, len(objs))
		}
		md := objs[0].Map["metadata"].(map[string]any)
		if ann, _ := md["annotations"].(map[string]any); ann["app"] != "web" {
			t.Errorf("%s: alias not expanded: %v", path, md)
		}
	}
}

// TestYAMLLimits holds the limits themselves: expansion just under the cap
// passes, just over it is refused, and so is nesting deeper than the cap.
func TestYAMLLimits(t *testing.T) {
	t.Parallel()
	under := "a: &a [" + strings.TrimSuffix(strings.Repeat("x,", 999), ",") + "]\nb: [" +
		strings.TrimSuffix(strings.Repeat("*a,", render.MaxYAMLAliasNodes/1000-1), ",") + "]\n"
	if err := render.CheckYAML([]byte(under)); err != nil {
		t.Errorf("expansion under the cap refused: %v", err)
	}
	over := under[:len(under)-2] + ",*a,*a]\n"
	if err := render.CheckYAML([]byte(over)); !errors.Is(err, render.ErrYAMLLimit) {
		t.Errorf("expansion over the cap: got %v", err)
	}
	deep := strings.Repeat("[", render.MaxYAMLDepth+1) + strings.Repeat("]", render.MaxYAMLDepth+1) + "\n"
	if err := render.CheckYAML([]byte(deep)); !errors.Is(err, render.ErrYAMLLimit) {
		t.Errorf("nesting over the cap: got %v", err)
	}
	shallow := strings.Repeat("[", render.MaxYAMLDepth-2) + strings.Repeat("]", render.MaxYAMLDepth-2) + "\n"
	if err := render.CheckYAML([]byte(shallow)); err != nil {
		t.Errorf("nesting under the cap refused: %v", err)
	}
	if err := render.CheckYAML([]byte("not: [yaml\n")); err != nil {
		t.Errorf("a file that is not YAML is left to its reader: %v", err)
	}
	// kyaml decodes each "---" part on its own: a bomb after a part that
	// is not YAML is still a bomb.
	if err := render.CheckYAML([]byte("a: b\n...\nbroken: [\n---\n" + hostile.AliasBomb(9, 7))); !errors.Is(err, render.ErrYAMLLimit) {
		t.Errorf("a bomb after a syntax error: got %v", err)
	}
	if err := render.CheckYAML([]byte("a: &a [*a]\n")); !errors.Is(err, render.ErrYAMLLimit) {
		t.Errorf("a recursive alias: got %v", err)
	}
}

// TestCancelledRenderStopsAtNextRead: a render inside krusty cannot see the
// context, so the confined filesystem checks it on every read; the first
// read after the cancellation ends the render.
func TestCancelledRenderStopsAtNextRead(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	var res []string
	for i := range 40 {
		name := fmt.Sprintf("cm%02d.yaml", i)
		res = append(res, name)
		files["app/"+name] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%02d}\n", i)
	}
	files["app/kustomization.yaml"] = "resources: [" + strings.Join(res, ", ") + "]\n"
	root := writeTree(t, files)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app, err := render.Open(ctx, render.Options{Root: root, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	render.OnRead(app.FS, func(string) {
		if reads++; reads == 5 {
			cancel()
		}
	})
	_, err = app.Build(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if exitcode.Code(err) == exitcode.Invalid {
		t.Errorf("a cancelled render is not invalid input: %v", err)
	}
	if reads != 5 {
		t.Errorf("%d reads went through after the cancellation", reads-5)
	}
}
