package cmp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion/policyfile"
)

// copyExample copies examples/gitops-env (its registry declares dev,
// staging and production) into a temporary repository root.
func copyExample(t *testing.T) string {
	t.Helper()
	src, dst := filepath.Join("..", "examples", "gitops-env"), t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// generateAt runs Generate in root/rel with an Application's environment.
func generateAt(t *testing.T, cache *cmp.Cache, root, rel string, environ ...string) (*cmp.Result, error) {
	t.Helper()
	return cmp.Generate(context.Background(), cmp.Options{
		WorkDir: filepath.Join(root, rel),
		Env: cmp.EnvFromEnviron(append([]string{"ARGOCD_APP_REVISION=" + strings.Repeat("a", 40), "ARGOCD_APP_SOURCE_PATH=" + rel,
			"ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/gitops.git"}, environ...)),
		Version: "v0.0.0-test",
		Cache:   cache,
	})
}

// TestGenerateEnvironmentIdentity: issue 14 item 2. A staging
// Application's environment rendering production's path is refused (exit 3)
// naming the path's environment and what the Application claims; the
// Acceptance of an agreeing Application says the path's environment.
func TestGenerateEnvironmentIdentity(t *testing.T) {
	t.Parallel()
	root, cache := copyExample(t), &cmp.Cache{Dir: t.TempDir()}
	const production = "apps/checkout/overlays/production"
	cases := []struct {
		name    string
		rel     string
		environ []string
		field   string
	}{
		{"staging's Application renders production", production,
			[]string{"ARGOCD_APP_NAME=checkout-staging", "ARGOCD_APP_NAMESPACE=checkout-staging", "PARAM_ENVIRONMENT=staging"},
			"environments.production.paths[0]"},
		{"the plugin env claims staging", production,
			[]string{"ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-production", "ARGOCD_ENV_ENVIRONMENT=staging"},
			"environments.production.paths[0]"},
		{"staging's destination namespace", production,
			[]string{"ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-staging"},
			"environments.production.namespaces"},
		{"an environment the registry does not know", production,
			[]string{"ARGOCD_APP_NAME=checkout-qa", "ARGOCD_APP_NAMESPACE=checkout-production", "PARAM_ENVIRONMENT=qa"},
			"environments"},
		{"a path of no environment", "apps/checkout/overlays/refused-unpinned",
			[]string{"ARGOCD_APP_NAME=checkout-staging", "ARGOCD_APP_NAMESPACE=checkout-staging", "PARAM_ENVIRONMENT=staging"},
			"environments"},
		{"another app's path", production,
			[]string{"ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-production", "PARAM_APP=payments"},
			"environments.production.paths[0]"},
	}
	msgs := golden.ErrorLines(t, "testdata/environment-identity.golden", len(cases))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := generateAt(t, cache, root, tc.rel, tc.environ...)
			var re *exitcode.Refusal
			if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused || res != nil {
				t.Fatalf("want a refusal (exit 3) and no manifests, got exit %d, %v", exitcode.Code(err), err)
			}
			if re.Rule != environment.RuleMismatch && re.Rule != environment.RuleUnknown {
				t.Errorf("rule %s", re.Rule)
			}
			if re.File != "throughline-policy.yaml" || re.Field != tc.field {
				t.Errorf("refusal names file %q field %q, want throughline-policy.yaml and %s", re.File, re.Field, tc.field)
			}
			// What each side claimed and the path: environment-identity.golden.
			msgs(tc.name, err)
		})
	}
	// The production Application as examples/gitops-env declares it, and
	// one without the parameter: the Acceptance says production.
	for _, environ := range [][]string{
		{"ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-production", "PARAM_ENVIRONMENT=production"},
		{"ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-production"},
	} {
		res, err := generateAt(t, cache, root, production, environ...)
		if err != nil {
			t.Fatalf("%v: %v", environ, err)
		}
		if res.Acceptance.Spec.Environment != "production" {
			t.Errorf("%v: Acceptance environment %q", environ, res.Acceptance.Spec.Environment)
		}
		// Without an app parameter the app is the registry's app of the
		// path, not the Application's name: the promotion record, the
		// evidence and the notifier look for Acceptance "checkout".
		if res.Acceptance.Spec.App != "checkout" || res.Acceptance.Name != "checkout" {
			t.Errorf("%v: Acceptance %s of app %q, want checkout (the registry's app of the path)", environ, res.Acceptance.Name, res.Acceptance.Spec.App)
		}
	}
	// With production's render in the cache, staging's claim is still refused.
	if _, err := generateAt(t, cache, root, production, "ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-staging"); exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("after a cached render: %v", err)
	}
}

// TestGenerateWithoutRegistry: a repository whose policy declares no
// environment renders as before, whatever the Application claims.
func TestGenerateWithoutRegistry(t *testing.T) {
	t.Parallel()
	root := copyExample(t)
	if err := os.Remove(filepath.Join(root, "throughline-policy.yaml")); err != nil {
		t.Fatal(err)
	}
	res, err := generateAt(t, nil, root, "apps/checkout/overlays/production",
		"ARGOCD_APP_NAME=checkout-staging", "ARGOCD_APP_NAMESPACE=checkout-staging", "PARAM_ENVIRONMENT=staging")
	if err != nil || res.Acceptance.Spec.Environment != "staging" {
		t.Fatalf("without a registry: %v %+v", err, res)
	}
}

// TestGenerateInvalidRegistry: a policy file that does not parse is
// invalid input naming it.
func TestGenerateInvalidRegistry(t *testing.T) {
	t.Parallel()
	root := copyExample(t)
	p := filepath.Join(root, "throughline-policy.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), "    protected: true", "    protected: true\n    bogus: 1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = generateAt(t, nil, root, "apps/checkout/overlays/production", "ARGOCD_APP_NAME=checkout-production")
	var re *policyfile.RecordError
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Invalid || re.File != policyfile.File {
		t.Fatalf("invalid policy: exit %d %v", exitcode.Code(err), err)
	}
}

// TestGenerateSubtreeStream: with manifest-generate-paths
// (--plugin-use-manifest-generate-paths) Argo CD streams only the common
// parent of the app path and the annotated paths, here apps/checkout, so
// the repository's root files are not in the stream. Files with their
// names at the top of what was streamed are an app team's, not the
// repository's: an allow-list there must not excuse an unpinned image in
// production, and a policy there must not be taken for the environment
// registry. The Acceptance still names the whole source path, and the
// render says that the root's files were not read.
func TestGenerateSubtreeStream(t *testing.T) {
	t.Parallel()
	repo := copyExample(t)
	const production = "apps/checkout/overlays/production"
	kz := filepath.Join(repo, production, "kustomization.yaml")
	data, err := os.ReadFile(kz)
	if err != nil {
		t.Fatal(err)
	}
	pinned := `newTag: "1.4.2@sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"`
	if !strings.Contains(string(data), pinned) {
		t.Fatal("the example's production pin moved")
	}
	unpinned := strings.Replace(string(data), pinned, `newTag: "1.4.2"`, 1)
	stream := filepath.Join(repo, "apps", "checkout") // what Argo CD streams
	hostileAllow := "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages:\n" +
		"  - pattern: \"ghcr.io/throughline-dev/checkout:*\"\n    reason: \"planted by the app team\"\nsecrets: []\n"
	policy, err := os.ReadFile(filepath.Join(repo, "throughline-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// A registry that sends the overlays/production path to staging: read
	// as the registry, it would make a staging Application's claim agree.
	hostilePolicy := strings.ReplaceAll(string(policy), `paths: ["apps/*/overlays/production"]`, `paths: ["nothing/*"]`)
	hostilePolicy = strings.ReplaceAll(hostilePolicy, `paths: ["apps/*/overlays/staging"]`, `paths: ["*/production"]`)
	for _, tc := range []struct {
		name    string
		files   map[string]string
		environ []string
		refused bool
	}{
		{"an allow-list planted at the top of the stream, unpinned image", map[string]string{
			"throughline-allowlist.yaml": hostileAllow, "overlays/production/kustomization.yaml": unpinned},
			[]string{"ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-production", "PARAM_ENVIRONMENT=production"}, true},
		{"a policy planted at the top of the stream", map[string]string{"throughline-policy.yaml": hostilePolicy},
			[]string{"ARGOCD_APP_NAME=checkout-production", "ARGOCD_APP_NAMESPACE=checkout-production", "PARAM_ENVIRONMENT=production",
				"PARAM_APP=checkout"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(stream)); err != nil {
				t.Fatal(err)
			}
			for p, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := cmp.Generate(context.Background(), cmp.Options{
				WorkDir: filepath.Join(dir, "overlays", "production"),
				Env: cmp.EnvFromEnviron(append([]string{"ARGOCD_APP_REVISION=" + strings.Repeat("a", 40),
					"ARGOCD_APP_SOURCE_PATH=" + production, "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/gitops.git"}, tc.environ...)),
				Version: "v0.0.0-test",
				Cache:   &cmp.Cache{Dir: t.TempDir()},
			})
			if tc.refused {
				if exitcode.Code(err) != exitcode.Refused {
					t.Fatalf("want a refusal of the unpinned image, got %v (exceptions %+v)", err, res.Acceptance.Spec.Exceptions)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			spec := res.Acceptance.Spec
			if spec.SourcePath != production || spec.App != "checkout" || spec.Environment != "production" {
				t.Fatalf("Acceptance path %q app %q environment %q, want %s, checkout, production", spec.SourcePath, spec.App, spec.Environment,
					production)
			}
			if !strings.Contains(res.Note, "throughline-policy.yaml") || !strings.Contains(res.Note, "manifest-generate-paths") {
				t.Fatalf("the render does not say the repository root was not streamed: note %q", res.Note)
			}
		})
	}
}
