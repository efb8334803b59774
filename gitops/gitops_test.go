package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
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

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo commits files into a new repository and opens it.
func newRepo(t *testing.T, files map[string]string) (*Repo, string) {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "init")
	r, err := OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	return r, git(t, dir, "rev-parse", "HEAD")
}

func TestReadNamed(t *testing.T) {
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
			if err != nil && !strings.Contains(err.Error(), tc.file) {
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
	if _, err := os.Stat(tree.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left %s: %v", tree.Root, err)
	}
}

func TestOpen(t *testing.T) {
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
