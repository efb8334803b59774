package cmp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

const digest = "sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"

func repoFiles(image string) map[string]string {
	return map[string]string{
		"apps/web/base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"apps/web/base/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "` + image + `"}]
`,
		"apps/web/overlays/staging/kustomization.yaml": "namespace: web-staging\nresources: [../../base]\nreplicas: [{name: web, count: 2}]\n",
		"apps/web/overlays/staging/.throughline":       "",
		"README.md":                                    "unrelated\n",
	}
}

func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	gittest.Write(t, root, files)
	return root
}

const appPath = "apps/web/overlays/staging"

func generateApp(t *testing.T, root, revision string, cache *cmp.Cache) (*cmp.Result, error) {
	t.Helper()
	return cmp.Generate(context.Background(), cmp.Options{
		WorkDir: filepath.Join(root, appPath),
		Env: cmp.EnvFromEnviron([]string{
			"ARGOCD_APP_NAME=web-staging", "ARGOCD_APP_NAMESPACE=web-staging", "ARGOCD_APP_REVISION=" + revision,
			"ARGOCD_APP_SOURCE_PATH=" + appPath, "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/gitops.git",
			"ARGOCD_ENV_ENVIRONMENT=staging", "KUBE_VERSION=1.31.0",
		}),
		Version: "v0.0.0-test",
		Cache:   cache,
	})
}

func TestEnvFromEnviron(t *testing.T) {
	t.Parallel()
	env := cmp.EnvFromEnviron([]string{
		"ARGOCD_APP_NAME=a", "ARGOCD_APP_SOURCE_PATH=apps/a", "ARGOCD_ENV_environment=from-env",
		"PARAM_ENVIRONMENT=from-param", "ARGOCD_ENV_APP=x", "PATH=/bin", "BROKEN",
	})
	if env.AppName != "a" || env.SourcePath != "apps/a" {
		t.Errorf("env %+v", env)
	}
	if got := env.Param("environment"); got != "from-param" {
		t.Errorf("parameter must win over plugin env: %q", got)
	}
	if got := env.Param("app"); got != "x" {
		t.Errorf("ARGOCD_ENV_ prefix not stripped: %q", got)
	}
	if _, ok := env.Params["PATH"]; ok {
		t.Error("unrelated env leaked into params")
	}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, repoFiles("r.example.test/web:1@"+digest))
	res, err := generateApp(t, root, "1111111111111111111111111111111111111111", nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.DecodeManifests(res.Manifests, "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].ID().Kind != "Deployment" || objs[1].ID().Kind != "Acceptance" {
		t.Fatalf("want the Deployment then one Acceptance, got %v", objs)
	}
	hash, _ := render.Hash(objs[:1])
	a := res.Acceptance
	if a.Spec.RenderedHash != hash || a.Spec.App != "web-staging" || a.Spec.Environment != "staging" ||
		strings.Contains(string(res.Manifests), "sourceRevision") || a.Namespace != "web-staging" ||
		a.Spec.SourcePath != appPath || a.Spec.Renderer != "v0.0.0-test" {
		t.Errorf("Acceptance %+v (hash %s)", a, hash)
	}
	if len(a.Spec.Workloads) != 1 || a.Spec.Workloads[0].Containers[0].Digest != digest {
		t.Errorf("workloads %+v", a.Spec.Workloads)
	}
	if !strings.Contains(string(res.Manifests), `"renderedHash":"`+hash+`"`) {
		t.Errorf("the Acceptance on stdout does not carry the hash:\n%s", res.Manifests)
	}
}

func TestGenerateRefusesUnpinned(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, repoFiles("r.example.test/web:1.2"))
	res, err := generateApp(t, root, "1", &cmp.Cache{Dir: t.TempDir()})
	var refusal *policy.Refusal
	if !errors.As(err, &refusal) || res != nil {
		t.Fatalf("got %v, %v; want a refusal and no result", res, err)
	}
	if v := refusal.Violations; len(v) != 1 || v[0].Rule != policy.RuleUnpinnedImage || v[0].Value != "r.example.test/web:1.2" {
		t.Errorf("refusal does not name the image: %+v", v)
	}
}

func TestGenerateSourcePathMismatch(t *testing.T) {
	t.Parallel()
	root := writeRepo(t, repoFiles("r.example.test/web@"+digest))
	_, err := cmp.Generate(context.Background(), cmp.Options{
		WorkDir: filepath.Join(root, appPath),
		Env:     cmp.Env{SourcePath: "apps/other"},
	})
	// The variable is named only in the message: render.RootFromSourcePath's
	// errors are untyped.
	var in *exitcode.InvalidInput
	if !errors.As(err, &in) || in.File != "apps/other" || !strings.Contains(err.Error(), cmp.EnvAppSourcePath) {
		t.Errorf("got %v", err)
	}
}

// TestCache plays Argo CD: every commit is streamed into a new directory.
func TestCache(t *testing.T) {
	t.Parallel()
	cache := &cmp.Cache{Dir: t.TempDir(), MaxPerApp: 2}
	files := repoFiles("r.example.test/web@" + digest)
	first, err := generateApp(t, writeRepo(t, files), "aaaa", cache)
	if err != nil || first.CacheHit || first.CacheErr != nil {
		t.Fatalf("first render: %+v, %v", first, err)
	}

	files["README.md"] = "a commit elsewhere in the repository\n"
	second, err := generateApp(t, writeRepo(t, files), "bbbb", cache)
	if err != nil {
		t.Fatal(err)
	}
	if !second.CacheHit {
		t.Error("unrelated commit missed the cache")
	}
	if string(second.Manifests) != string(first.Manifests) {
		t.Errorf("cached output differs:\n%s\n---\n%s", first.Manifests, second.Manifests)
	}

	files["apps/web/base/deploy.yaml"] = strings.Replace(files["apps/web/base/deploy.yaml"], "r.example.test/web@", "r.example.test/web:2@", 1)
	third, err := generateApp(t, writeRepo(t, files), "cccc", cache)
	if err != nil {
		t.Fatal(err)
	}
	if third.CacheHit || third.Acceptance.Spec.RenderedHash == first.Acceptance.Spec.RenderedHash {
		t.Errorf("a changed base file was served from the cache: hit=%v hash=%s", third.CacheHit, third.Acceptance.Spec.RenderedHash)
	}

	files["apps/web/overlays/staging/patch.yaml"] = "unused by the kustomization\n"
	files["apps/web/base/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n"
	files["apps/web/base/kustomization.yaml"] = "resources: [deploy.yaml, extra.yaml]\n"
	fourth, err := generateApp(t, writeRepo(t, files), "dddd", cache)
	if err != nil || fourth.CacheHit || fourth.Acceptance.Spec.ObjectCount != 2 {
		t.Fatalf("new resource: hit=%v objects=%d err=%v", fourth.CacheHit, fourth.Acceptance.Spec.ObjectCount, err)
	}
	var entries int
	_ = filepath.WalkDir(cache.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			entries++
		}
		return nil
	})
	if entries != 2 {
		t.Errorf("cache holds %d entries for the app, bound is 2", entries)
	}
}

func TestCacheIsKeyedByEnv(t *testing.T) {
	t.Parallel()
	cache := &cmp.Cache{Dir: t.TempDir()}
	root := writeRepo(t, repoFiles("r.example.test/web@"+digest))
	if _, err := generateApp(t, root, "a", cache); err != nil {
		t.Fatal(err)
	}
	res, err := cmp.Generate(context.Background(), cmp.Options{
		WorkDir: filepath.Join(root, appPath),
		Env:     cmp.EnvFromEnviron([]string{"ARGOCD_APP_NAME=web-staging", "ARGOCD_APP_SOURCE_PATH=" + appPath, "ARGOCD_ENV_ENVIRONMENT=production"}),
		Version: "v0.0.0-test",
		Cache:   cache,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.CacheHit || res.Acceptance.Spec.Environment != "production" {
		t.Errorf("a different parameter was served from the cache: %+v", res.Acceptance.Spec)
	}
}

func TestGenerateConcurrent(t *testing.T) {
	t.Parallel()
	cache := &cmp.Cache{Dir: t.TempDir()}
	root := writeRepo(t, repoFiles("r.example.test/web@"+digest))
	var wg sync.WaitGroup
	outs := make([]string, 8)
	errs := make([]error, 8)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := generateApp(t, root, "rev", cache)
			errs[i] = err
			if err == nil {
				outs[i] = string(res.Manifests)
			}
		}()
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil || outs[i] != outs[0] {
			t.Fatalf("call %d: %v, output differs: %v", i, errs[i], outs[i] != outs[0])
		}
	}
}
