package committed_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/committed"
)

const policy = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  staging:
    paths: ["apps/*/overlays/staging"]
    namespaces: ["*-staging", "shared-cache"]
`

const checks = `apiVersion: throughline.dev/v1alpha1
kind: RuntimeChecks
soak: 5m
checks:
  - name: healthz
    http: {service: {name: checkout, port: 80}, path: /healthz}
  - name: cache
    http: {service: {namespace: shared-cache, name: redis-http, port: 8080}, path: /ping}
`

const file = "apps/checkout/overlays/staging/throughline-checks.yaml"

// repo commits files into a new Git repository and opens it.
func repo(t *testing.T, files map[string]string) *gitops.Repo {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	env := testenv.GitEnv(t.TempDir())
	testenv.Git(t, ctx, env, dir, "init", "-q", "-b", "main")
	for p, s := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Git(t, ctx, env, dir, "add", "-A")
	testenv.Git(t, ctx, env, dir, "commit", "-q", "-m", "checks")
	r, err := gitops.OpenLocal(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// live is what the render puts into the Acceptance for content, judged
// as the render judges it.
func live(t *testing.T, content string) *v1alpha1.RuntimeChecks {
	t.Helper()
	rc, err := checkfile.Parse(file, []byte(content), checkfile.Options{AnyNamespace: true})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestJudge attacks the verifier's comparison as a holder of the `edit`
// role would: an Acceptance with a check added, a check pointed at another
// tenant or at kube-system, a sourcePath borrowed from another app, an
// Acceptance in another app's namespace; only the committed checks in a
// namespace the registry binds to the app run.
func TestJudge(t *testing.T) {
	withReg := repo(t, map[string]string{"throughline-policy.yaml": policy, file: checks})
	noReg := repo(t, map[string]string{file: strings.Replace(checks, "    http: {service: {namespace: shared-cache", "    http: {service: {namespace: checkout", 1)})
	added := checks + "  - name: peek\n    http: {service: {namespace: payments-staging, name: payments, port: 80}, path: /admin}\n"
	foreign := strings.Replace(checks, "namespace: shared-cache", "namespace: payments-staging", 1)
	kube := strings.Replace(checks, "namespace: shared-cache", "namespace: kube-system", 1)
	body := strings.Replace(checks, "path: /ping}", "path: /ping, bodyMatch: '^SECRET-a'}", 1)
	for _, tc := range []struct {
		name      string
		repo      *gitops.Repo
		namespace string
		source    string
		live      string
		differs   string // "" when the checks run
		probe     []string
	}{
		{"the committed checks", withReg, "checkout-staging", "apps/checkout/overlays/staging", checks, "", []string{"shared-cache"}},
		{"an added check", withReg, "checkout-staging", "apps/checkout/overlays/staging", added, "differ", nil},
		{"a check moved to another tenant", withReg, "checkout-staging", "apps/checkout/overlays/staging", foreign, "differ", nil},
		{"a check moved to kube-system", withReg, "checkout-staging", "apps/checkout/overlays/staging", kube, "differ", nil},
		{"a body regex added", withReg, "checkout-staging", "apps/checkout/overlays/staging", body, "differ", nil},
		{"checks where Git has none", withReg, "payments-staging", "apps/payments/overlays/staging", checks, "not declared", nil},
		{"another app's namespace", withReg, "payments-staging", "apps/checkout/overlays/staging", checks, "not one the registry", nil},
		{"no overlay of the registry", withReg, "checkout-staging", "tmp/anything", checks, "no overlay", nil},
		{"a path out of the repository", withReg, "checkout-staging", "../x", checks, "no overlay path", nil},
		{"no registry: the committed checks", noReg, "checkout", "apps/checkout/overlays/staging", strings.Replace(checks, "namespace: shared-cache", "namespace: checkout", 1), "", nil},
		{"no registry: in another namespace", noReg, "kube-system", "apps/checkout/overlays/staging", strings.Replace(checks, "namespace: shared-cache", "namespace: checkout", 1), "refused", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &committed.Source{Repo: tc.repo}
			v, err := s.Judge(context.Background(), tc.namespace, tc.source, live(t, tc.live))
			if err != nil {
				t.Fatal(err)
			}
			if (tc.differs == "") != (v.Differs == "") || !strings.Contains(v.Differs, tc.differs) {
				t.Fatalf("differs %q, want %q", v.Differs, tc.differs)
			}
			if !slices.Equal(v.ProbeNamespaces, tc.probe) {
				t.Fatalf("probe namespaces %q, want %q", v.ProbeNamespaces, tc.probe)
			}
		})
	}
}

// TestTipReused: the tip is resolved once per TipTTL, then again.
func TestTipReused(t *testing.T) {
	r := repo(t, map[string]string{file: checks})
	asked := 0
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &committed.Source{Repo: r, TipTTL: time.Minute, Now: func() time.Time { return now },
		Tip: func(ctx context.Context) (string, error) { asked++; return r.BaseRev(ctx) }}
	for _, d := range []time.Duration{0, 30 * time.Second, 2 * time.Minute} {
		now = now.Add(d)
		if _, err := s.Judge(context.Background(), "checkout", "apps/checkout/overlays/staging", nil); err != nil {
			t.Fatal(err)
		}
	}
	if asked != 2 {
		t.Fatalf("the tip was resolved %d times, want 2", asked)
	}
}
