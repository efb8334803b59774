package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// debugAgentPatch is the dev overlay's allow-listed sidecar (the
// allow-list scopes registry.example.test/vendor/debug-agent:* to dev).
const debugAgentPatch = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: checkout\nspec:\n  template:\n    spec:\n" +
	"      containers:\n        - name: debug-agent\n          image: registry.example.test/vendor/debug-agent:3.1\n"

// copyOf is a kustomization that renders the overlay at from (relative to
// the new directory) with the given patches and resources added.
func copyOf(from string, resources, patches []string) string {
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + from + "\n"
	for _, r := range resources {
		k += "  - " + r + "\n"
	}
	if len(patches) > 0 {
		k += "patches:\n"
		for _, p := range patches {
			k += "  - path: " + p + "\n"
		}
	}
	return k
}

// TestRenderEnvironmentOnlyFromRegistry attacks the environment of a render
// as a hostile contributor would: with an environment registry, a
// directory that the registry does not list but that is named like an
// environment under overlays/ (a copy of production with the dev-only
// sidecar, a production Secret under another app's tree) must not get that
// environment's scoped allow-list exceptions, from render or from pin. The
// registry's own paths keep theirs, an unregistered directory renders in
// no environment (only unscoped exceptions hold), and without a registry
// the directory convention (overlays/<env>) still holds.
func TestRenderEnvironmentOnlyFromRegistry(t *testing.T) {
	repo := copyTree(t, exampleRepo)
	allow := filepath.Join(repo, "throughline-allowlist.yaml")
	writeTree(t, repo, map[string]string{
		// production plus the dev-only sidecar, under a directory named dev
		// that apps/*/overlays/dev does not match.
		"apps/checkout/copy/overlays/dev/kustomization.yaml": copyOf("../../../overlays/production", nil, []string{"debug.yaml"}),
		"apps/checkout/copy/overlays/dev/debug.yaml":         debugAgentPatch,
		// a plaintext Secret allowed in production only, under a copy.
		"apps/checkout/copy/overlays/production/kustomization.yaml": copyOf("../../../overlays/production", []string{"db-secret.yaml"}, nil),
		"apps/checkout/copy/overlays/production/db-secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: checkout-db\n" +
			"  namespace: checkout-production\ntype: Opaque\nstringData:\n  password: " + secretOld + "\n",
		"throughline-allowlist.yaml": strings.Replace(readFile(t, allow), "secrets: []\n", "secrets:\n  - name: checkout-db\n"+
			"    namespace: checkout-production\n    environments: [production]\n    reason: legacy password (SEC-2001)\n", 1),
		// a legitimate unregistered render: production as a preview.
		"apps/checkout/preview/kustomization.yaml": copyOf("../overlays/production", nil, nil),
	})
	noRegistry := copyTree(t, repo)
	if err := os.Remove(filepath.Join(noRegistry, "throughline-policy.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, root, dir string
		args            []string
		code            int
		env             string // the Acceptance's spec.environment when the render passes
	}{
		{"dev-only sidecar under an unregistered overlays/dev", repo, "apps/checkout/copy/overlays/dev", nil, exitcode.Refused, ""},
		{"unregistered overlays/dev claimed as dev", repo, "apps/checkout/copy/overlays/dev", []string{"--environment", "dev"}, exitcode.Refused, ""},
		{"production Secret under an unregistered overlays/production", repo, "apps/checkout/copy/overlays/production", nil, exitcode.Refused, ""},
		{"the registry's dev path keeps its exception", repo, "apps/checkout/overlays/dev", nil, exitcode.OK, "dev"},
		{"an unregistered directory renders in no environment", repo, "apps/checkout/preview", nil, exitcode.OK, ""},
		{"without a registry the directory convention holds", noRegistry, "apps/checkout/copy/overlays/dev", nil, exitcode.OK, "dev"},
		{"without a registry, a Secret under overlays/production", noRegistry, "apps/checkout/copy/overlays/production", nil, exitcode.OK, "production"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(tc.root, filepath.FromSlash(tc.dir))
			r := runCLI(t, append(append([]string{"render", "--root", tc.root, "-o", "json"}, tc.args...), dir)...)
			if r.code != tc.code {
				t.Fatalf("render: exit %d, want %d:\n%s", r.code, tc.code, r.stderr)
			}
			assertNoNeedle(t, "render's log", r.stderr) // stdout is the render itself
			unlisted := tc.root == repo && tc.args == nil && !strings.HasPrefix(tc.dir, "apps/checkout/overlays/")
			if note := "no environment's path in throughline-policy.yaml"; strings.Contains(r.stderr, note) != unlisted {
				t.Errorf("render notes %q: %v, want %v:\n%s", note, !unlisted, unlisted, r.stderr)
			}
			if tc.code == exitcode.OK {
				if got := renderedEnvironment(t, r.stdout); got != tc.env {
					t.Errorf("the Acceptance declares environment %q, want %q", got, tc.env)
				}
			}
			if strings.Contains(tc.name, "Secret") {
				return // pin judges images only
			}
			chk := runCLI(t, append(append([]string{"pin", "--check", "--root", tc.root}, tc.args...), dir)...)
			if chk.code != tc.code {
				t.Fatalf("pin --check: exit %d, render exit %d\n%s\n%s", chk.code, tc.code, chk.stdout, chk.stderr)
			}
		})
	}
}

// renderedEnvironment is spec.environment of the Acceptance in render's
// JSON output.
func renderedEnvironment(t *testing.T, out string) string {
	t.Helper()
	var list struct {
		Items []struct {
			Kind string
			Spec struct{ Environment string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("render -o json: %v", err)
	}
	for _, it := range list.Items {
		if it.Kind == "Acceptance" {
			return it.Spec.Environment
		}
	}
	t.Fatalf("render printed no Acceptance")
	return ""
}

// TestRenderEnvironmentThroughSymlinks: the registry judges the directory
// that renders (symlinks resolved, as render and the CMP resolve them). A
// registered-looking path that is a symlink to an unregistered copy of
// production with the dev-only sidecar gets no environment; the dev
// overlay reached through a symlink to the repository keeps dev.
func TestRenderEnvironmentThroughSymlinks(t *testing.T) {
	repo := copyTree(t, exampleRepo)
	writeTree(t, repo, map[string]string{
		"apps/checkout/copy/overlays/dev/kustomization.yaml": copyOf("../../../overlays/production", nil, []string{"debug.yaml"}),
		"apps/checkout/copy/overlays/dev/debug.yaml":         debugAgentPatch,
	})
	if err := os.MkdirAll(filepath.Join(repo, "apps/x/overlays"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../checkout/copy/overlays/dev", filepath.Join(repo, "apps/x/overlays/dev")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		code       int
	}{
		{"apps/x/overlays/dev is a symlink to an unregistered copy", filepath.Join(repo, "apps/x/overlays/dev"), exitcode.Refused},
		{"the dev overlay through a symlink to the repository", filepath.Join(link, "apps/checkout/overlays/dev"), exitcode.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range []string{"render", "pin --check"} {
				r := runCLI(t, append(strings.Fields(cmd), "--root", repo, tc.path)...)
				if r.code != tc.code {
					t.Errorf("%s: exit %d, want %d:\n%s", cmd, r.code, tc.code, r.stderr)
				}
			}
		})
	}
}

// TestRenderAppFromRegistry: with a registry, the Acceptance's app is the
// registry's app of the path (an explicit apps: entry), not the directory
// name; an --app that disagrees is refused like the CMP's app parameter.
func TestRenderAppFromRegistry(t *testing.T) {
	repo := copyTree(t, exampleRepo)
	pol := filepath.Join(repo, "throughline-policy.yaml")
	writeTree(t, repo, map[string]string{
		"legacy/billing-staging/kustomization.yaml": copyOf("../../apps/checkout/overlays/staging", nil, nil),
		"throughline-policy.yaml": strings.Replace(readFile(t, pol), "    paths: [\"apps/*/overlays/staging\"]\n",
			"    paths: [\"apps/*/overlays/staging\"]\n    apps: {billing: legacy/billing-staging}\n", 1),
	})
	dir := filepath.Join(repo, "legacy", "billing-staging")
	for _, tc := range []struct {
		args []string
		code int
		app  string
	}{
		{nil, exitcode.OK, "billing"},
		{[]string{"--app", "billing"}, exitcode.OK, "billing"},
		{[]string{"--app", "billing-staging"}, exitcode.Refused, ""},
	} {
		r := runCLI(t, append(append([]string{"render", "--root", repo, "-o", "json"}, tc.args...), dir)...)
		if r.code != tc.code {
			t.Fatalf("render %v: exit %d, want %d:\n%s", tc.args, r.code, tc.code, r.stderr)
		}
		if tc.code != exitcode.OK {
			continue
		}
		var list struct {
			Items []struct {
				Kind string
				Spec struct{ App, Environment string }
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			if it.Kind == "Acceptance" && (it.Spec.App != tc.app || it.Spec.Environment != "staging") {
				t.Errorf("render %v: the Acceptance declares app %q in %q, want %q in staging", tc.args, it.Spec.App, it.Spec.Environment, tc.app)
			}
		}
	}
}
