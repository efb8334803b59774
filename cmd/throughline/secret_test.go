package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
)

// The needles: a Secret's old and new values, never to be shown.
const (
	secretOld = "hunter2-plaintext"
	secretNew = "NEWSECRET-plaintext"
)

func secretDoc(name, value string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\ntype: Opaque\nstringData:\n  password: " + value + "\n"
}

// addBaseSecret adds a Secret with a plaintext value to the checkout base.
func addBaseSecret(t *testing.T, root string) {
	t.Helper()
	k := filepath.Join(root, "apps/checkout/base/kustomization.yaml")
	writeTree(t, root, map[string]string{
		"apps/checkout/base/db-secret.yaml":     secretDoc("checkout-db", secretOld),
		"apps/checkout/base/kustomization.yaml": strings.Replace(readFile(t, k), "  - cronjob.yaml\n", "  - cronjob.yaml\n  - db-secret.yaml\n", 1),
	})
}

func assertNoNeedle(t *testing.T, what string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		for _, needle := range []string{secretOld, secretNew, "hunter2", "NEWSECRET"} {
			if strings.Contains(s, needle) {
				t.Errorf("%s shows the Secret value %q:\n%s", what, needle, s)
			}
		}
	}
}

// TestSecretRefusedEverywhere: a base Secret with a plaintext value is
// refused (exit 3, rule secret-plaintext) by render, cmp generate and
// promote check, and no refusal shows the value.
func TestSecretRefusedEverywhere(t *testing.T) {
	t.Run("render", func(t *testing.T) {
		repo := copyTree(t, exampleRepo)
		addBaseSecret(t, repo)
		r := runCLI(t, "render", "--root", repo, filepath.Join(repo, "apps/checkout/overlays/production"))
		if r.code != exitcode.Refused || !strings.Contains(r.stderr, "secret-plaintext: Secret checkout-production/checkout-db: stringData") {
			t.Fatalf("exit %d, want %d naming the rule and the Secret: %s", r.code, exitcode.Refused, r.stderr)
		}
		assertNoNeedle(t, "render", r.stdout, r.stderr)
	})
	t.Run("cmp generate", func(t *testing.T) {
		repo := copyTree(t, exampleRepo)
		addBaseSecret(t, repo)
		rel := "apps/checkout/overlays/staging"
		t.Chdir(filepath.Join(repo, rel))
		t.Setenv("ARGOCD_APP_NAME", "checkout-staging")
		t.Setenv("ARGOCD_APP_NAMESPACE", "checkout-staging")
		t.Setenv("ARGOCD_APP_REVISION", "0123456789abcdef0123456789abcdef01234567")
		t.Setenv("ARGOCD_APP_SOURCE_PATH", rel)
		t.Setenv("PARAM_ENVIRONMENT", "staging")
		r := runCLI(t, "cmp", "generate", "--cache-dir", t.TempDir())
		if r.code != exitcode.Refused || r.stdout != "" || !strings.Contains(r.stderr, "secret-plaintext") {
			t.Fatalf("exit %d, want %d: stdout %q, stderr %s", r.code, exitcode.Refused, r.stdout, r.stderr)
		}
		assertNoNeedle(t, "cmp generate", r.stdout, r.stderr)
	})
	t.Run("promote check", func(t *testing.T) {
		top, root := promoteFixture(t)
		branch := proposeBranch(t, root)
		amendBranch(t, top, branch, func() { addBaseSecret(t, root) })
		for _, out := range []string{"text", "json"} {
			r := runCLI(t, "promote", "check", "--repo", root, "--base", "main", "--head", branch, "-o", out)
			if r.code != exitcode.Refused || !strings.Contains(r.stdout+r.stderr, "secret-plaintext") {
				t.Fatalf("-o %s: exit %d, want %d naming secret-plaintext:\n%s\n%s", out, r.code, exitcode.Refused, r.stdout, r.stderr)
			}
			assertNoNeedle(t, "promote check -o "+out, r.stdout, r.stderr)
		}
	})
}

// TestSecretValueNeverShown: a Secret the allow-list lets carry a value in
// production renders; propose --forge (stdout, stderr, the PR body, the
// commit it makes) and promote check of a PR that changes the value show
// it as changed with short hashes, never the old or new value.
func TestSecretValueNeverShown(t *testing.T) {
	top, root := promoteFixture(t)
	k := filepath.Join(root, "apps/checkout/overlays/production/kustomization.yaml")
	allow := filepath.Join(root, "throughline-allowlist.yaml")
	writeTree(t, root, map[string]string{
		"apps/checkout/overlays/production/db-secret.yaml":     secretDoc("checkout-db", secretOld),
		"apps/checkout/overlays/production/kustomization.yaml": strings.Replace(readFile(t, k), "  - ../../base\n", "  - ../../base\n  - db-secret.yaml\n", 1),
		"throughline-allowlist.yaml": strings.Replace(readFile(t, allow), "secrets: []\n", "secrets:\n  - name: checkout-db\n    namespace: checkout-production\n"+
			"    environments: [production]\n    reason: legacy database password, moving to ExternalSecret (SEC-2001)\n", 1),
	})
	gittest.Run(t, top, "add", "-A")
	gittest.Run(t, top, "commit", "-q", "-m", "production: an allow-listed Secret")
	r := runCLI(t, "render", "--root", root, "-o", "json", filepath.Dir(k))
	if r.code != exitcode.OK || !strings.Contains(r.stderr, "allow-list exception used: Secret") || !strings.Contains(r.stdout, `"secret": "checkout-db"`) {
		t.Fatalf("the allow-listed Secret is refused in production, or its exception is silent: %d %s", r.code, r.stderr)
	}
	assertNoNeedle(t, "render's log", r.stderr)
	if r := runCLI(t, "render", "--root", root, "--environment", "staging", filepath.Dir(k)); r.code != exitcode.Refused {
		t.Fatalf("a production-only Secret exception held in staging: %d %s", r.code, r.stderr)
	}

	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"number":7,"html_url":"https://github.example/pr/7"}`)
	}))
	defer srv.Close()
	t.Setenv("THROUGHLINE_FORGE_TOKEN", "tok")
	r = runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production", "-o", "json",
		"--forge", "github", "--forge-url", srv.URL, "--forge-repo", "platform/gitops-env")
	if r.code != exitcode.OK || len(bodies) != 1 {
		t.Fatalf("propose: %d (%d pull requests) %s %s", r.code, len(bodies), r.stdout, r.stderr)
	}
	assertNoNeedle(t, "propose", r.stdout, r.stderr, bodies[0])
	var p struct{ Branch string }
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatal(err)
	}
	assertNoNeedle(t, "the commit propose made", gittest.Run(t, top, "diff", "main", p.Branch))

	amendBranch(t, top, p.Branch, func() {
		writeTree(t, root, map[string]string{"apps/checkout/overlays/production/db-secret.yaml": secretDoc("checkout-db", secretNew)})
	})
	for _, out := range []string{"text", "json"} {
		r := runCLI(t, "promote", "check", "--repo", root, "--base", "main", "--head", p.Branch, "-o", out)
		if r.code != exitcode.Refused {
			t.Fatalf("-o %s: exit %d, want %d (a Secret changed in a promotion):\n%s\n%s", out, r.code, exitcode.Refused, r.stdout, r.stderr)
		}
		assertNoNeedle(t, "promote check -o "+out, r.stdout, r.stderr)
		if out == "text" && !strings.Contains(r.stdout+r.stderr, "Secret checkout-production/checkout-db stringData.password: changed (hmac:") {
			t.Errorf("the changed Secret value is not listed as changed:\n%s\n%s", r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "apps/checkout/overlays/production/db-secret.yaml")); err != nil {
		t.Fatal(err)
	}
}

// TestRenderRefusedSecretOverlay: the example overlay make demo shows is
// refused for its plaintext Secret, naming the rule, the Secret and its
// keys, and the refusal never shows the value.
func TestRenderRefusedSecretOverlay(t *testing.T) {
	const value = "demo-only-not-a-real-password"
	dir := exampleOverlay("refused-secret")
	if !strings.Contains(readFile(t, filepath.Join(dir, "db-credentials.yaml")), value) {
		t.Fatalf("the example no longer holds the needle %q", value)
	}
	r := runCLI(t, "render", "--root", exampleRepo, dir)
	if r.code != exitcode.Refused || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, want %d and nothing: %s", r.code, r.stdout, exitcode.Refused, r.stderr)
	}
	for _, want := range []string{"1 violation(s)", "secret-plaintext: Secret checkout-hotfix/checkout-db: stringData:",
		"keys stringData.password, stringData.username; values not shown", "apps/checkout/overlays/refused-secret/kustomization.yaml"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, value) {
		t.Errorf("the refusal shows the value:\n%s", r.stderr)
	}
}

// TestSecretValueCopiedByReplacements: kustomize replacements copy a
// Secret's value into a container image, a label and an annotation (and,
// in the overlay, the Secret itself is deleted after the copy); render and
// cmp generate refuse the unpinned image (exit 3) and no message, on stdout
// or stderr, shows the value.
func TestSecretValueCopiedByReplacements(t *testing.T) {
	const value = "copied-s3cr3t-value"
	root := chartRoot(t, map[string]string{
		"apps/web/base/kustomization.yaml": `resources: [secret.yaml, deploy.yaml]
replacements:
  - source: {kind: Secret, name: db, fieldPath: stringData.password}
    targets:
      - select: {kind: Deployment}
        fieldPaths: [spec.template.spec.containers.0.image, metadata.labels.leak, metadata.annotations.leak]
`,
		"apps/web/base/secret.yaml": secretDoc("db", value),
		"apps/web/base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {leak: x}, annotations: {leak: x}}\n" +
			"spec:\n  template:\n    spec:\n      containers: [{name: web, image: placeholder}]\n",
		"apps/web/overlays/staging/kustomization.yaml": "resources: [../../base]\npatches:\n" +
			"  - patch: |\n      $patch: delete\n      apiVersion: v1\n      kind: Secret\n      metadata: {name: db}\n",
	})
	noValue := func(t *testing.T, what string, texts ...string) {
		t.Helper()
		for _, s := range texts {
			if strings.Contains(s, value) || strings.Contains(s, "s3cr3t") {
				t.Errorf("%s shows the Secret value:\n%s", what, s)
			}
		}
	}
	for _, app := range []string{"apps/web/base", "apps/web/overlays/staging"} {
		t.Run("render "+app, func(t *testing.T) {
			r := runCLI(t, "render", "--root", root, filepath.Join(root, app))
			if r.code != exitcode.Refused || !strings.Contains(r.stderr, "unpinned-image") {
				t.Fatalf("exit %d, want %d (unpinned-image): %s", r.code, exitcode.Refused, r.stderr)
			}
			noValue(t, "render", r.stdout, r.stderr)
		})
		t.Run("cmp generate "+app, func(t *testing.T) {
			t.Chdir(filepath.Join(root, app))
			t.Setenv("ARGOCD_APP_NAME", "web")
			t.Setenv("ARGOCD_APP_NAMESPACE", "web")
			t.Setenv("ARGOCD_APP_REVISION", "0123456789abcdef0123456789abcdef01234567")
			t.Setenv("ARGOCD_APP_SOURCE_PATH", app)
			r := runCLI(t, "cmp", "generate", "--cache-dir", t.TempDir())
			if r.code != exitcode.Refused || r.stdout != "" || !strings.Contains(r.stderr, "unpinned-image") {
				t.Fatalf("exit %d, want %d: stdout %q, stderr %s", r.code, exitcode.Refused, r.stdout, r.stderr)
			}
			noValue(t, "cmp generate", r.stdout, r.stderr)
		})
	}
}
