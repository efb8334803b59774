package notifier

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

const registryPolicy = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  staging:
    paths: ["apps/*/overlays/staging"]
    namespaces: ["*-staging"]
  production:
    paths: ["apps/*/overlays/production"]
    namespaces: ["*-production"]
`

// pushPolicy commits the policy file on the origin's main.
func (f *fixture) pushPolicy(policy string) {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "c")
	gittest.Run(f.t, filepath.Dir(dir), "clone", "-q", f.origin, dir)
	gittest.Commit(f.t, dir, "registry", map[string]string{promotion.PolicyFile: policy})
	gittest.Run(f.t, dir, "push", "-q", "origin", "main")
}

// argoApp is the Application argocd/checkout rendering paths (one
// source, or several) into destNS.
func argoApp(destNS string, paths ...string) *unstructured.Unstructured {
	u := application(destNS)
	spec := u.Object["spec"].(map[string]any)
	switch len(paths) {
	case 0:
	case 1:
		spec["source"] = map[string]any{"repoURL": "https://git.example.test/gitops.git", "path": paths[0]}
	default:
		var sources []any
		for _, p := range paths {
			sources = append(sources, map[string]any{"repoURL": "https://git.example.test/gitops.git", "path": p})
		}
		spec["sources"] = sources
	}
	return u
}

// fluxKs is the Kustomization flux-system/checkout applying p into target.
func fluxKs(p, target string) *unstructured.Unstructured {
	u := kustomization(target)
	u.Object["spec"].(map[string]any)["path"] = p
	return u
}

// TestDeliveryBoundToItsEnvironment: with a registry at the base, a
// delivery for checkout in production is decided only when its controller
// object renders production's path of checkout into one of production's
// namespaces; otherwise it is refused (409) and nothing is written.
func TestDeliveryBoundToItsEnvironment(t *testing.T) {
	t.Parallel()
	const prod, stg = "apps/checkout/overlays/production", "apps/checkout/overlays/staging"
	for _, tc := range []struct {
		name, source string
		objs         func(t testing.TB) []runtime.Object
		code         int
		reason       string
	}{
		{"argocd production", "argocd", func(t testing.TB) []runtime.Object {
			return []runtime.Object{argoApp("checkout-production", prod), acceptanceIn(t, "checkout-production", "checkout")}
		}, http.StatusOK, ""},
		{"argocd staging's path", "argocd", func(t testing.TB) []runtime.Object {
			return []runtime.Object{argoApp("checkout-production", stg), acceptanceIn(t, "checkout-production", "checkout")}
		}, http.StatusConflict, "environment staging's, not production's"},
		{"argocd staging's namespace", "argocd", func(t testing.TB) []runtime.Object {
			return []runtime.Object{argoApp("checkout-staging", prod), acceptanceIn(t, "checkout-staging", "checkout")}
		}, http.StatusConflict, `namespace "checkout-staging" is not one of environment production's`},
		{"argocd another app's path", "argocd", func(t testing.TB) []runtime.Object {
			return []runtime.Object{argoApp("checkout-production", "apps/payments/overlays/production"), acceptanceIn(t, "checkout-production", "checkout")}
		}, http.StatusConflict, "is app payments's, not checkout's"},
		{"argocd no source path", "argocd", func(t testing.TB) []runtime.Object {
			return []runtime.Object{argoApp("checkout-production"), acceptanceIn(t, "checkout-production", "checkout")}
		}, http.StatusConflict, "names no source path"},
		{"argocd a second source of staging", "argocd", func(t testing.TB) []runtime.Object {
			return []runtime.Object{argoApp("checkout-production", prod, stg), acceptanceIn(t, "checkout-production", "checkout")}
		}, http.StatusConflict, "environment staging's"},
		{"flux production", "flux", func(t testing.TB) []runtime.Object {
			return []runtime.Object{fluxKs("./"+prod, "checkout-production"), acceptanceIn(t, "checkout-production", "checkout")}
		}, http.StatusOK, ""},
		{"flux staging's path", "flux", func(t testing.TB) []runtime.Object {
			return []runtime.Object{fluxKs("./"+stg, "checkout-production"), acceptanceIn(t, "checkout-production", "checkout")}
		}, http.StatusConflict, "environment staging's, not production's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			f.pushPolicy(registryPolicy)
			k := fakeKube(tc.objs(t)...)
			k.Registry = BaseRegistry(&gitops.Repo{Repo: f.repo, Base: "main"})
			f.handler.proc.Live = k
			tip := f.tip()
			var code int
			var rep reply
			if tc.source == "argocd" {
				code, rep = f.argo(argoBody(f.desired["checkout"], "Healthy"))
			} else {
				code, rep = f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
			}
			if code != tc.code || !strings.Contains(rep.Reason, tc.reason) {
				t.Fatalf("%d %+v, want %d with a reason naming %q", code, rep, tc.code, tc.reason)
			}
			rec := f.checkoutRecord()
			if tc.code != http.StatusOK {
				if rep.Result != resultUnbound || f.tip() != tip || rec.State != promotion.Reconciling {
					t.Fatalf("refused delivery %+v wrote: tip %s (was %s), record %s", rep, f.tip(), tip, rec.State)
				}
				return
			}
			if rec.State != promotion.Accepted || f.evidenceOf(rec).Acceptance != "checkout-production/checkout" {
				t.Fatalf("record %s", rec.State)
			}
		})
	}
}

// TestDeliveryWithoutRegistry: a repository without environments binds
// as before.
func TestDeliveryWithoutRegistry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	k := fakeKube(argoApp("shop", "apps/checkout/overlays/staging"), acceptanceIn(t, "shop", "checkout"))
	k.Registry = BaseRegistry(&gitops.Repo{Repo: f.repo, Base: "main"})
	f.handler.proc.Live = k
	if code, rep := f.argo(argoBody(f.desired["checkout"], "Healthy")); code != http.StatusOK {
		t.Fatalf("%d %+v", code, rep)
	}
}
