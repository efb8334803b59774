package render_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

// TestGolden renders every testdata/golden/<case>/input tree at the path in
// <case>/path and compares the objects and the hash with expected.yaml and
// expected.hash.
func TestGolden(t *testing.T) {
	t.Parallel()
	cases, err := os.ReadDir("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata/golden", c.Name())
			rel, err := os.ReadFile(filepath.Join(dir, "path"))
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(dir, "input")
			objs := build(t, root, strings.TrimSpace(string(rel)))
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

func build(t *testing.T, root, path string) []render.Object {
	t.Helper()
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: path})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	objs, err := app.Build(context.Background())
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return objs
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestOpenModes(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"k/kustomization.yml": "resources: [cm.yaml]\n",
		"k/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"k2/Kustomization":    "resources: [cm.yaml]\n",
		"k2/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"plain/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
	})
	for path, want := range map[string]render.Mode{"k": render.ModeKustomize, "k2": render.ModeKustomize, "plain": render.ModeDirectory} {
		app, err := render.Open(context.Background(), render.Options{Root: root, Path: path})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if app.Mode != want {
			t.Errorf("%s: mode %s, want %s", path, app.Mode, want)
		}
		if got := len(build(t, root, path)); got != 1 {
			t.Errorf("%s: %d objects, want 1", path, got)
		}
	}
}

func TestRemoteResourcesAreListedAndNeverFetched(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml": `resources:
  - cm.yaml
  - https://github.com/example/repo//deploy?ref=v1.2.3
  - github.com/example/other/base?ref=0123456789abcdef0123456789abcdef01234567
  - git@github.com:example/third.git//x?ref=main
  - ../shared
`,
		"app/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"shared/kustomization.yaml": "resources: [https://example.test/raw/manifest.yaml]\n",
	})
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, r := range app.Remote() {
		urls = append(urls, r.Field+"="+r.URL)
	}
	want := "resources[1]=https://github.com/example/repo//deploy?ref=v1.2.3 resources[2]=github.com/example/other/base?ref=0123456789abcdef0123456789abcdef01234567 resources[3]=git@github.com:example/third.git//x?ref=main resources[0]=https://example.test/raw/manifest.yaml"
	if got := strings.Join(urls, " "); got != want {
		t.Errorf("remote resources:\n got %s\nwant %s", got, want)
	}
	_, err = app.Build(context.Background())
	if !errors.Is(err, exitcode.ErrInvalid) || invalidFile(t, err) != "app/kustomization.yaml" {
		t.Fatalf("Build with remote resources: %v, want an invalid-input error asking to vendor", err)
	}
	// That it asks to vendor the base is in the message only.
	msgs := golden.ErrorLines(t, "testdata/remote-build.golden", 1)
	msgs("remote resources", err)
}

func TestIsRemote(t *testing.T) {
	t.Parallel()
	for entry, want := range map[string]bool{
		"deploy.yaml":                      false,
		"../../base":                       false,
		"./configs/app.v2":                 false,
		"base/v1.2/app":                    false,
		"github.com/org/repo//path?ref=x":  true,
		"https://example.test/a.yaml":      true,
		"git@github.com:org/repo.git//x":   true,
		"ssh://git@example.test/repo.git":  true,
		"gitlab.example.test/group/repo":   true,
		"local?ref=0123":                   true,
		"git::https://example.test/r.git/": true,
	} {
		if got := render.IsRemote(entry); got != want {
			t.Errorf("IsRemote(%q) = %v, want %v", entry, got, want)
		}
	}
}

func TestRootDiscovery(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(repo, "apps", "a", "overlays", "prod")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := render.FindRoot(app)
	if err != nil || got != repo {
		t.Errorf("FindRoot(work tree) = %q, %v; want %q", got, err, repo)
	}
	plain := t.TempDir()
	if got, err := render.FindRoot(plain); err != nil || got != plain {
		t.Errorf("FindRoot(no git) = %q, %v; want %q", got, err, plain)
	}

	// RootFromSourcePath's errors are untyped: their wording is in
	// testdata/root-from-source-path.golden.
	msgs := golden.ErrorLines(t, "testdata/root-from-source-path.golden", 3)
	for _, tc := range []struct {
		wd, source, want, prefix string
		bad                      bool
	}{
		{"/tmp/x/apps/a/overlays/prod", "apps/a/overlays/prod", "/tmp/x", "", false},
		{"/tmp/x/apps/a/overlays/prod", "apps/a/overlays/prod/", "/tmp/x", "", false},
		{"/tmp/x/apps/a/overlays/prod", "./apps/a/overlays/prod", "/tmp/x", "", false},
		{"/tmp/x", ".", "/tmp/x", "", false},
		{"/tmp/x", "", "/tmp/x", "", false},
		{"/tmp/x/apps/a", "apps/b", "", "", true},
		// manifest-generate-paths: only apps/checkout was streamed.
		{"/tmp/x/overlays/staging", "apps/checkout/overlays/staging", "/tmp/x", "apps/checkout", false},
		{"/tmp/x/staging", "apps/checkout/overlays/staging", "/tmp/x", "apps/checkout/overlays", false},
		{"/tmp/x/apps/a", "../apps/a", "", "", true},
		{"/tmp/x/apps/a", "/apps/a", "", "", true},
	} {
		got, prefix, err := render.RootFromSourcePath(tc.wd, tc.source)
		if tc.bad {
			if err == nil {
				t.Errorf("RootFromSourcePath(%q, %q) = %q; want an error", tc.wd, tc.source, got)
				continue
			}
			msgs(tc.wd+" "+tc.source, err)
			continue
		}
		if err != nil || got != tc.want || prefix != tc.prefix {
			t.Errorf("RootFromSourcePath(%q, %q) = %q, %q, %v; want %q, %q", tc.wd, tc.source, got, prefix, err, tc.want, tc.prefix)
		}
	}
}

func TestConfinedFSRefusesWrites(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fsys, err := render.NewConfinedFS(root, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"WriteFile": fsys.WriteFile(filepath.Join(root, "x"), []byte("x")),
		"Mkdir":     fsys.Mkdir(filepath.Join(root, "d")),
		"MkdirAll":  fsys.MkdirAll(filepath.Join(root, "d/e")),
		"RemoveAll": fsys.RemoveAll(root),
	} {
		if !errors.Is(err, render.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write went through: %v", err)
	}
}

func TestTraceReplay(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"app/kustomization.yaml":  "resources: [../base]\n",
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"other/unrelated.yaml":    "x: 1\n",
	}
	root := writeTree(t, files)
	trace := &render.Trace{}
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app", Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	replay := func(root string) bool {
		fsys, err := render.NewConfinedFS(root, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return render.Replay(fsys, trace.Probes)
	}
	// A copy elsewhere (Argo CD streams each commit into a new directory)
	// with an unrelated change replays clean.
	files["other/unrelated.yaml"] = "x: 2\n"
	if !replay(writeTree(t, files)) {
		t.Error("unrelated change invalidated the trace")
	}
	files["base/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
	if replay(writeTree(t, files)) {
		t.Error("a changed base file did not invalidate the trace")
	}
	files["base/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	files["app/kustomization.yml"] = "resources: [../base]\n"
	if replay(writeTree(t, files)) {
		t.Error("a new competing kustomization file did not invalidate the trace")
	}
}

// TestTraceReplayLarge replays a trace long enough to be spread over several
// workers: unchanged it replays clean, and a change to any one of its files
// (the first, one in the middle, the last) invalidates it.
func TestTraceReplayLarge(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	files := map[string]string{}
	var resources []string
	for i := range 600 {
		n := fmt.Sprintf("cm-%03d.yaml", i)
		resources = append(resources, n)
		files["app/"+n] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d}\n", i)
	}
	files["app/kustomization.yaml"] = "resources: [" + strings.Join(resources, ", ") + "]\n"
	trace := &render.Trace{}
	app, err := render.Open(context.Background(), render.Options{Root: writeTree(t, files), Path: "app", Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	probes := trace.Compact()
	if len(probes) < 2*256 {
		t.Fatalf("%d probes: too few for several workers", len(probes))
	}
	replay := func(files map[string]string) bool {
		fsys, err := render.NewConfinedFS(writeTree(t, files), 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return render.Replay(fsys, probes)
	}
	if !replay(files) {
		t.Fatal("an unchanged tree did not replay clean")
	}
	for _, n := range []string{"cm-000.yaml", "cm-300.yaml", "cm-599.yaml"} {
		changed := maps.Clone(files)
		changed["app/"+n] += "data: {changed: \"true\"}\n"
		if replay(changed) {
			t.Errorf("a change to %s did not invalidate the trace", n)
		}
	}
}

// TestReadRootFile: the repository's root files are read only from the
// repository's root. A filesystem over a part of the repository (what
// Argo CD streams with manifest-generate-paths) answers "does not exist"
// for them even when a file of that name sits at the top of the part,
// and a name that is a path is refused.
func TestReadRootFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "throughline-allowlist.yaml"), []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, err := render.NewConfinedFS(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := whole.ReadRootFile("throughline-allowlist.yaml"); err != nil || string(data) != "planted" {
		t.Fatalf("the repository's root file: %q, %v", data, err)
	}
	if _, err := whole.ReadRootFile("missing.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing root file: %v, want fs.ErrNotExist", err)
	}
	part, err := render.NewConfinedSubtree(dir, "apps/checkout", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := part.ReadRootFile("throughline-allowlist.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file at the top of apps/checkout/ read as the repository's: %q, %v", data, err)
	}
	for _, name := range []string{"", ".", "..", "../x", "a/b", "/etc/passwd"} {
		if _, err := whole.ReadRootFile(name); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadRootFile(%q) = %v, want a refusal of the name", name, err)
		}
	}
	for _, prefix := range []string{"/apps", "..", "../apps", "."} {
		if _, err := render.NewConfinedSubtree(dir, prefix, 0, nil); err == nil {
			t.Errorf("NewConfinedSubtree(prefix %q) accepted", prefix)
		}
	}
}
