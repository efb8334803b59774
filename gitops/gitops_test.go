package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
)

// doc is a record kind as the record packages define them.
type doc struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
}

func (d *doc) AppEnv() (string, string) { return d.App, d.Environment }

func parseDoc(file string, data []byte) (*doc, error) {
	var d doc
	if err := sigyaml.UnmarshalStrict(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &d, nil
}

// newRepo commits files into a new repository and opens it.
func newRepo(t *testing.T, files map[string]string) (*Repo, string) {
	t.Helper()
	dir := t.TempDir()
	gittest.Init(t, dir)
	rev := gittest.Commit(t, dir, "init", files)
	r, err := OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	return r, rev
}

func TestReadNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, rev := newRepo(t, map[string]string{
		"promotion/checkout/staging.yaml":    "app: checkout\nenvironment: staging\n",
		"promotion/checkout/production.yaml": "app: checkout\nenvironment: staging\n", // copied, not edited
		"promotion/checkout/qa.yaml":         "app: checkout\nenvironment: qa\nextra: 1\n",
	})
	for _, tc := range []struct {
		file, app, env string
		found          bool
		code           int
	}{
		{"promotion/checkout/staging.yaml", "checkout", "staging", true, exitcode.OK},
		{"promotion/checkout/missing.yaml", "checkout", "missing", false, exitcode.OK},
		{"promotion/checkout/production.yaml", "checkout", "production", false, exitcode.Invalid},
		{"promotion/checkout/qa.yaml", "checkout", "qa", false, exitcode.Invalid},
		{"promotion/checkout/staging.yaml", "payments", "staging", false, exitcode.Invalid},
	} {
		t.Run(tc.file+" as "+tc.app+"/"+tc.env, func(t *testing.T) {
			d, found, err := ReadNamed(ctx, r, rev, tc.file, tc.app, tc.env, parseDoc)
			if found != tc.found || exitcode.Code(err) != tc.code {
				t.Fatalf("ReadNamed = %v, %v, %v; want found %v, exit %d", d, found, err, tc.found, tc.code)
			}
			var in *exitcode.InvalidInput
			if err != nil && (!errors.As(err, &in) || in.File != tc.file) {
				t.Errorf("the error does not name the file: %v", err)
			}
			if found && d.App != tc.app {
				t.Errorf("read %+v", d)
			}
		})
	}
	// Git failing is an error, not "no record".
	if err := os.WriteFile(filepath.Join(r.Top, ".git", "config"), []byte("[core\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, found, err := Read(ctx, r, rev, "promotion/checkout/staging.yaml", parseDoc); err == nil || found ||
		exitcode.Code(err) != exitcode.Internal {
		t.Errorf("Read in a broken repository: %v, want an internal error", err)
	}
}

func TestTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0@sha256:` + strings.Repeat("a", 64) + "\n"
	r, rev := newRepo(t, map[string]string{
		"apps/web/base/deploy.yaml":                  deploy,
		"apps/web/base/kustomization.yaml":           "resources: [deploy.yaml]\n",
		"apps/web/overlays/staging/Kustomization":    "resources: [../../base]\nnamespace: web-staging\n",
		"apps/web/overlays/plain/deploy.yaml":        deploy,
		"apps/web/overlays/dir/kustomization.yaml/x": "a directory named like a kustomization\n",
	})
	tree, err := r.Tree(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tree.Close(); err != nil {
			t.Error(err)
		}
	}()
	k, err := tree.KustomizationFile(ctx, "apps/web/overlays/staging")
	if err != nil || k != "apps/web/overlays/staging/Kustomization" {
		t.Errorf("KustomizationFile(staging) = %q, %v", k, err)
	}
	for _, p := range []string{"apps/web/overlays/plain", "apps/web/overlays/dir"} {
		if k, err := tree.KustomizationFile(ctx, p); exitcode.Code(err) != exitcode.Invalid {
			t.Errorf("KustomizationFile(%s) = %q, %v; want invalid input", p, k, err)
		}
	}
	objs, hash, err := tree.Render(ctx, "apps/web/overlays/staging")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].ID().Namespace != "web-staging" || !strings.HasPrefix(hash, "sha256:") {
		t.Errorf("Render = %d objects %v, %s", len(objs), objs, hash)
	}
	d, err := tree.Declare(ctx, "apps/web/overlays/staging", "staging", "test")
	if err != nil {
		t.Fatal(err)
	}
	if d.Hash != hash {
		t.Errorf("Declare hash %s, Render hash %s: the two must agree", d.Hash, hash)
	}
	if err := tree.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tree.root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left %s: %v", tree.root, err)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := OpenLocal(ctx, ""); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("OpenLocal(\"\") = %v, want a usage error", err)
	}
	if _, err := OpenLocal(ctx, t.TempDir()); exitcode.Code(err) != exitcode.Invalid {
		t.Errorf("OpenLocal(not a repository) = %v, want invalid input", err)
	}
	r, rev := newRepo(t, map[string]string{"a.yaml": "a: 1\n"})
	if got, err := r.BaseRev(ctx); err != nil || got != rev || r.Base != "main" {
		t.Errorf("BaseRev = %s, %v (base %q); want %s on main", got, err, r.Base, rev)
	}
}

// TestOptionalFileStaysInTheTree: the gates read checks and values files
// through OptionalFile. A pull request that commits an overlay directory
// as a symlink leaving the repository (or the file itself as one) must not
// make them read the machine's files: before, the readers checked only the
// last path component with Lstat and followed a symlinked directory.
func TestOptionalFileStaysInTheTree(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "throughline-checks.yaml"), []byte("secret: from the machine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := newRepo(t, map[string]string{
		"apps/web/overlays/staging/throughline-checks.yaml": "apiVersion: throughline.dev/v1alpha1\n",
		"apps/web/overlays/staging/values.yaml":             "replicas: 2\n",
	})
	tree := symlinkTree(t, r, map[string]string{
		"apps/web/overlays/escape":                     outside,
		"apps/web/overlays/staging/escape-values.yaml": filepath.Join(outside, "throughline-checks.yaml"),
		"apps/web/overlays/staging/up.yaml":            "../../../../../../../../../../" + filepath.Join(outside, "throughline-checks.yaml"),
		"apps/web/overlays/staging/inside.yaml":        "values.yaml",
	})
	for _, c := range []struct {
		path string
		want string // content; "" with invalid: refused
		code int
	}{
		{"apps/web/overlays/staging/values.yaml", "replicas: 2\n", exitcode.OK},
		{"apps/web/overlays/staging/inside.yaml", "", exitcode.Invalid}, // a symlink even inside the tree: content from another file
		{"apps/web/overlays/staging/none.yaml", "", exitcode.OK},
		{"apps/web/overlays/escape/throughline-checks.yaml", "", exitcode.Invalid},
		{"apps/web/overlays/staging/escape-values.yaml", "", exitcode.Invalid},
		{"apps/web/overlays/staging/up.yaml", "", exitcode.Invalid},
		{"apps/web/overlays/staging", "", exitcode.Invalid}, // a directory
	} {
		data, err := tree.OptionalFile(c.path)
		if exitcode.Code(err) != c.code || string(data) != c.want {
			t.Errorf("OptionalFile(%s) = %q, %v; want %q, exit %d", c.path, data, err, c.want, c.code)
		}
		if err != nil && strings.Contains(err.Error(), outside) {
			t.Errorf("OptionalFile(%s): the error names the machine path: %v", c.path, err)
		}
	}
}

// TestWriteFileNeverFollowsSymlinks: propose and the break-glass
// write-back write edited files into the exported tree. A repository whose
// overlay (or the edited file itself) is a symlink must not make them
// write outside it: the write is refused, nothing outside changes.
func TestWriteFileNeverFollowsSymlinks(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	victim := filepath.Join(outside, "values.yaml")
	if err := os.WriteFile(victim, []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := newRepo(t, map[string]string{"apps/web/overlays/staging/values.yaml": "replicas: 2\n"})
	tree := symlinkTree(t, r, map[string]string{
		"apps/web/overlays/escape":                 outside,
		"apps/web/overlays/staging/linked.yaml":    victim,
		"apps/web/overlays/staging/in-values.yaml": "values.yaml",
	})
	for _, c := range []struct {
		path string
		code int
	}{
		{"apps/web/overlays/staging/values.yaml", exitcode.OK},
		{"apps/web/overlays/staging/new.yaml", exitcode.OK}, // a new file in an existing directory
		{"apps/web/overlays/escape/values.yaml", exitcode.Invalid},
		{"apps/web/overlays/staging/linked.yaml", exitcode.Invalid},
		{"apps/web/overlays/staging/in-values.yaml", exitcode.Invalid}, // even a symlink inside the tree
		{"apps/web/overlays/missing/values.yaml", exitcode.Invalid},
		{"../values.yaml", exitcode.Invalid},
		{".git/config", exitcode.Invalid},
		{"apps/.GIT/hooks/pre-commit", exitcode.Invalid},
		{"apps/web/overlays/staging", exitcode.Invalid},
	} {
		if err := tree.WriteFile(c.path, []byte("replicas: 9\n")); exitcode.Code(err) != c.code {
			t.Errorf("WriteFile(%s) = %v, want exit %d", c.path, err, c.code)
		}
	}
	// A work tree has a .git: never written, never read through the tree.
	wt := WorkTree(r.Top)
	cfg, err := os.ReadFile(filepath.Join(r.Top, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.WriteFile(".git/config", []byte("[core]\n\tfsmonitor = evil\n")); exitcode.Code(err) != exitcode.Invalid {
		t.Errorf("WriteFile(.git/config) in a work tree = %v, want invalid input", err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Top, ".git", "config")); string(b) != string(cfg) {
		t.Fatal("a write reached the work tree's .git/config")
	}
	if b, err := wt.OptionalFile(".git/config"); exitcode.Code(err) != exitcode.Invalid || b != nil {
		t.Errorf("OptionalFile(.git/config) in a work tree = %q, %v, want invalid input", b, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched\n" {
		t.Fatalf("a write followed a symlink out of the tree: %s now holds %q", victim, b)
	}
	if b, err := tree.OptionalFile("apps/web/overlays/staging/new.yaml"); err != nil || string(b) != "replicas: 9\n" {
		t.Fatalf("new.yaml = %q, %v", b, err)
	}
	files, err := tree.Files("apps/web/overlays")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasPrefix(f, "apps/web/overlays/escape/") {
			t.Errorf("Files listed %s, through a symlink out of the tree", f)
		}
	}
	if _, err := tree.Files("apps/web/overlays/escape"); exitcode.Code(err) != exitcode.Invalid {
		t.Errorf("Files through a symlinked directory: %v, want invalid input", err)
	}
	if dirs, _ := tree.Subdirs("apps/web/overlays"); strings.Join(dirs, ",") != "staging" {
		t.Errorf("Subdirs = %v, want [staging] (escape leaves the tree)", dirs)
	}
}

// symlinkTree commits the symlinks (path -> target) into r and exports
// that commit; the test closes it.
func symlinkTree(t *testing.T, r *Repo, links map[string]string) *Tree {
	t.Helper()
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(r.Top, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, r.Top, "add", "-A")
	gittest.Run(t, r.Top, "commit", "-q", "-m", "symlinks")
	tree, err := r.Tree(context.Background(), gittest.Run(t, r.Top, "rev-parse", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tree.Close() })
	return tree
}

// TestReadParsedOncePerCommit: the readers of one file at one commit parse
// it once (the gate's steps, the ledger and the trust policy all read the
// policy at the base); each gets its own copy, so one caller's edit is not
// another's document; a revision that can move (a branch) is read again
// every time, and a missing file is remembered as missing.
func TestReadParsedOncePerCommit(t *testing.T) {
	t.Parallel()
	r, head := newRepo(t, map[string]string{"d.yaml": "app: checkout\nenvironment: staging\n"})
	parses := 0
	parse := func(file string, data []byte) (*doc, error) {
		parses++
		return parseDoc(file, data)
	}
	clone := func(d *doc) *doc { c := *d; return &c }
	ctx := context.Background()
	first, found, err := ReadParsed(ctx, r, head, "d.yaml", parse, clone)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	first.App = "edited by one caller"
	second, _, err := ReadParsed(ctx, r, head, "d.yaml", parse, clone)
	if err != nil || second.App != "checkout" || parses != 1 {
		t.Fatalf("second read %+v after %d parses: %v", second, parses, err)
	}
	for range 2 {
		if _, _, err := ReadParsed(ctx, r, "main", "d.yaml", parse, clone); err != nil {
			t.Fatal(err)
		}
	}
	if parses != 3 {
		t.Fatalf("%d parses: a branch is read each time", parses)
	}
	for range 2 {
		if _, found, err := ReadParsed(ctx, r, head, "none.yaml", parse, clone); err != nil || found {
			t.Fatal(found, err)
		}
	}
}
