//go:build e2e

package fluxcontrol

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// The tenant of TestFluxTenantAppliesAcceptance: staging's namespace, its
// own GitRepository and Kustomization, and the ServiceAccount Flux
// impersonates there.
const (
	tenantSA   = "flux-apply"
	tenantUser = "system:serviceaccount:" + appNS + ":" + tenantSA
	tenantKs   = "checkout"
	escapeKs   = "escape"
	escapeDir  = "tenants/escape" // an Acceptance naming production's namespace
)

// TestFluxTenantAppliesAcceptance is Flux's multi-tenant setup as a
// platform team runs it (issue 22, item 5): kube-apiserver with its RBAC
// authorizer, the real kube-controller-manager with its
// clusterrole-aggregation controller, the Acceptance CRD, and a tenant
// namespace (checkout-staging) whose ServiceAccount is bound by a
// RoleBinding in that namespace to the built-in `admin` ClusterRole and
// nothing else (`flux create tenant --cluster-role=admin`). The tenant's
// Kustomization (spec.serviceAccountName, targetNamespace its namespace,
// wait: true) applies staging's overlay with its committed Acceptance
// through the real kustomize-controller's impersonation:
//   - without deploy/crds/acceptance-roles.yaml the apply is Forbidden on
//     acceptances and nothing is applied (the aggregation is what makes
//     it work);
//   - once the platform team applies it, the real aggregation controller
//     adds Acceptances to `admin`, Flux applies the Acceptance and the
//     Deployment; a verdict the tenant forged in the committed
//     Acceptance's status (it owns its repository and its PR job) is not
//     live, so nothing is Ready until the verifier verifies the Acceptance,
//     then the Kustomization turns Ready;
//   - a second Kustomization of the same tenant applying an Acceptance
//     named in checkout-production is Forbidden: the rights reach only
//     the tenant's namespace;
//   - deleting the tenant's Kustomization prunes its Acceptance, again
//     under impersonation (delete).
//
// Played: the kubelet (kube.rollout).
func TestFluxTenantAppliesAcceptance(t *testing.T) {
	testenv.RequireFluxControllers(t)
	testenv.RequireControllerManager(t)
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	fc := testenv.StartFluxControllers(t, api, testenv.FluxControllersOptions{})
	t.Logf("real components: kube-apiserver v%s (RBAC), kube-controller-manager, %s", testenv.K8sVersion, fc.Versions)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	c := api.Client
	testenv.StartControllerManager(ctx, t, api)
	testenv.StartVerifier(ctx, t, api.Config)
	for _, ns := range []string{appNS, productionEnv.ns} {
		namespace(ctx, t, c, ns)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-amd64",
		Labels: map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}
	must(t, c.Create(ctx, node))
	k := &kube{t: t, ctx: ctx, c: c, node: node.Name}
	tenant(ctx, t, c)
	applied := []struct{ apiVersion, kind, name string }{{accAPI, "Acceptance", accName}, {"apps/v1", "Deployment", "checkout"}}

	// The tenant's repository: staging's overlay with its committed
	// Acceptance, and a directory with a copy of it naming production's
	// namespace (for the second Kustomization).
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{})
	g := newGitOps(ctx, t, gs, root)
	if r := g.cli("render", "--write-acceptance", filepath.Join(g.dir, overlay)); r.Code != 0 {
		t.Fatalf("render --write-acceptance: exit %d: %s", r.Code, r.Stderr)
	}
	accFile := filepath.Join(g.dir, overlay, "throughline-acceptance.yaml")
	acc := readYAML(t, accFile)[0]
	// The tenant owns its repository (and its PR job): it commits a forged
	// verdict in the Acceptance's status, which it has no right to write.
	forged := acc.DeepCopy()
	must(t, unstructured.SetNestedField(forged.Object, map[string]any{
		"observedGeneration": int64(1), "verifiedAt": time.Now().UTC().Format(time.RFC3339),
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": v1alpha1.ReasonVerified,
			"message": "forged by the tenant", "observedGeneration": int64(1), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
	}, "status"))
	writeYAML(t, accFile, forged)
	acc.SetNamespace(productionEnv.ns)
	must(t, os.MkdirAll(filepath.Join(g.dir, escapeDir), 0o755))
	writeYAML(t, filepath.Join(g.dir, escapeDir, "acceptance.yaml"), acc)
	commit := g.commit("staging's Acceptance with a forged status; an Acceptance in production's namespace")
	g.git("push", "-q", "origin", "main")
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": srcAPI, "kind": "GitRepository",
		"metadata": map[string]any{"name": "gitops-env", "namespace": appNS},
		"spec":     map[string]any{"interval": "1m", "url": g.remote, "ref": map[string]any{"branch": "main"}},
	}}))
	must(t, c.Create(ctx, tenantKustomization(tenantKs, "./"+overlay, appNS)))

	// Without the aggregated roles: Forbidden on acceptances, nothing applied.
	forbidden(ctx, t, c, tenantKs, appNS, "arrow tenant Kustomization -> Forbidden without acceptance-roles.yaml")
	for _, o := range applied {
		if _, why := get(ctx, c, o.apiVersion, o.kind, appNS, o.name); why == "" {
			t.Fatalf("the tenant's Kustomization applied the %s %s/%s while Forbidden on acceptances", o.kind, appNS, o.name)
		}
	}

	// The platform team applies deploy/crds' aggregated roles; the real
	// clusterrole-aggregation controller adds them to admin.
	aggregateAcceptances(ctx, t, c, root)
	requestReconcile(ctx, t, c, appNS, tenantKs)
	eventually(ctx, t, 2*time.Minute, "arrow tenant Kustomization -> Acceptance and Deployment applied under impersonation", func() string {
		for _, o := range applied {
			if _, why := get(ctx, c, o.apiVersion, o.kind, appNS, o.name); why != "" {
				return why + "; " + ksState(ctx, c, appNS, tenantKs)
			}
		}
		return ""
	})
	// The forged status is not live: kustomize-controller drops a committed
	// status before it applies (fluxcd/pkg/ssa's normalize; seen with the
	// CRD's status subresource removed), and the API server ignores status
	// in writes to an object with that subresource (only serve may write
	// acceptances/status). No Pod runs, so nothing is Ready.
	time.Sleep(6 * time.Second) // one health-check round (every ~5 s)
	if u, _ := get(ctx, c, accAPI, "Acceptance", appNS, accName); u != nil {
		if s, r, m := ready(u); s == "True" || strings.Contains(m, "forged") {
			t.Fatalf("arrow committed status -> live Acceptance: the tenant's forged verdict is live: Ready %s %s: %s", s, r, m)
		}
	}
	if u, _ := get(ctx, c, ksAPI, "Kustomization", appNS, tenantKs); u != nil {
		if s, r, m := ready(u); s == "True" {
			t.Fatalf("arrow forged status -> Kustomization Ready before any Pod ran: %s: %s", r, m)
		}
	}
	k.rollout(appNS, "checkout", "", imageRepo+"@"+digest)
	eventually(ctx, t, time.Minute, "arrow verifier -> tenant's Acceptance Verified", func() string {
		u, why := get(ctx, c, accAPI, "Acceptance", appNS, accName)
		if why != "" {
			return why
		}
		if s, r, m := ready(u); r != v1alpha1.ReasonVerified {
			return "Ready " + s + " " + r + ": " + m
		}
		return ""
	})
	want := fluxRevision(commit)
	eventually(ctx, t, 2*time.Minute, "arrow tenant Kustomization -> Ready at the commit", func() string {
		u, why := get(ctx, c, ksAPI, "Kustomization", appNS, tenantKs)
		if why != "" {
			return why
		}
		if s, r, m := ready(u); s != "True" || nested(u, "status", "lastAppliedRevision") != want {
			return fmt.Sprintf("Ready %s %s: %s; lastAppliedRevision %q, want %q", s, r, m, nested(u, "status", "lastAppliedRevision"), want)
		}
		return ""
	})

	if acc, _ := get(ctx, c, accAPI, "Acceptance", appNS, accName); acc.GetLabels()["kustomize.toolkit.fluxcd.io/name"] != tenantKs {
		t.Errorf("the tenant's Acceptance lacks Flux's ownership label: labels %v", acc.GetLabels())
	}

	// The attack: the same tenant applies an Acceptance named in
	// production's namespace. Its rights stop at its own namespace.
	must(t, c.Create(ctx, tenantKustomization(escapeKs, "./"+escapeDir, "")))
	forbidden(ctx, t, c, escapeKs, productionEnv.ns, "arrow tenant Kustomization -> Forbidden in another namespace")
	if _, why := get(ctx, c, accAPI, "Acceptance", productionEnv.ns, accName); why == "" {
		t.Fatalf("the tenant applied an Acceptance in %s", productionEnv.ns)
	}

	// The tenant removes its app: kustomize-controller's garbage collection,
	// impersonating the tenant too, deletes what it applied (prune: true).
	must(t, c.Delete(ctx, tenantKustomization(tenantKs, "", "")))
	eventually(ctx, t, time.Minute, "arrow deleted tenant Kustomization -> Acceptance pruned under impersonation", func() string {
		if _, why := get(ctx, c, accAPI, "Acceptance", appNS, accName); why == "" {
			return "Acceptance " + appNS + "/" + accName + " still there; " + ksState(ctx, c, appNS, tenantKs)
		}
		if _, why := get(ctx, c, ksAPI, "Kustomization", appNS, tenantKs); why == "" {
			return "Kustomization " + appNS + "/" + tenantKs + " still there (finalizer)"
		}
		return ""
	})
}

// tenant creates the tenant's ServiceAccount in appNS and binds it there,
// by a RoleBinding, to the built-in admin ClusterRole: nothing more.
func tenant(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: tenantSA}}))
	must(t, c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: tenantSA},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: appNS, Name: tenantSA}},
	}))
}

// tenantKustomization is a Kustomization of the tenant (in its namespace,
// impersonating its ServiceAccount, wait: true) applying path of its
// GitRepository, with targetNamespace unless empty.
func tenantKustomization(name, path, targetNamespace string) *unstructured.Unstructured {
	spec := map[string]any{
		"interval": "1m", "retryInterval": "1m", "timeout": "2m", "path": path, "prune": true, "wait": true,
		"serviceAccountName": tenantSA,
		"sourceRef":          map[string]any{"kind": "GitRepository", "name": "gitops-env"},
	}
	if targetNamespace != "" {
		spec["targetNamespace"] = targetNamespace
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ksAPI, "kind": "Kustomization",
		"metadata": map[string]any{"name": name, "namespace": appNS},
		"spec":     spec,
	}}
}

// forbidden waits until the tenant's Kustomization name is not Ready
// because the API server refused the tenant's ServiceAccount an Acceptance
// in namespace ns.
func forbidden(ctx context.Context, t *testing.T, c client.Client, name, ns, arrow string) {
	t.Helper()
	eventually(ctx, t, 2*time.Minute, arrow, func() string {
		u, why := get(ctx, c, ksAPI, "Kustomization", appNS, name)
		if why != "" {
			return why
		}
		s, r, m := ready(u)
		for _, w := range []string{"forbidden", tenantUser, `"acceptances"`, `namespace "` + ns + `"`} {
			if s != "False" || !strings.Contains(m, w) {
				return fmt.Sprintf("Ready %s %s: %s; want False naming %s", s, r, m, w)
			}
		}
		t.Logf("%s: Ready %s %s: %s", arrow, s, r, m)
		return ""
	})
}

// writeYAML writes one object to a file of the clone.
func writeYAML(t *testing.T, path string, u *unstructured.Unstructured) {
	t.Helper()
	b, err := yaml.Marshal(u.Object)
	must(t, err)
	must(t, os.WriteFile(path, b, 0o644))
}

// requestReconcile asks kustomize-controller to reconcile a Kustomization
// now (the reconcile.fluxcd.io/requestedAt annotation, as flux reconcile
// does).
func requestReconcile(ctx context.Context, t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ksAPI)
	u.SetKind("Kustomization")
	u.SetNamespace(ns)
	u.SetName(name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().UTC().Format(time.RFC3339Nano))
	must(t, c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))))
}

// ksState is a Kustomization's Ready condition, for a failure message.
func ksState(ctx context.Context, c client.Client, ns, name string) string {
	u, why := get(ctx, c, ksAPI, "Kustomization", ns, name)
	if why != "" {
		return why
	}
	s, r, m := ready(u)
	return "Kustomization " + ns + "/" + name + " Ready " + s + " " + r + ": " + m
}
