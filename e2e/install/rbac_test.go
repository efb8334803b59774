//go:build e2e

package install

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// access is one SubjectAccessReview: may user do verb on group/resource
// (a subresource after a "/") in namespace ("" cluster-wide)?
type access struct {
	verb, group, resource, namespace string
	allowed                          bool
}

func (a access) String() string {
	ns := a.namespace
	if ns == "" {
		ns = "(all namespaces)"
	}
	return fmt.Sprintf("%s %s.%s in %s", a.verb, a.resource, a.group, ns)
}

// review asks the API server's RBAC authorizer whether user (with groups)
// may do a; it fails the test when the answer is not a.allowed.
func review(t *testing.T, ctx context.Context, c client.Client, user string, groups []string, a access) {
	t.Helper()
	res, sub, _ := cutSub(a.resource)
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: res, Subresource: sub, Namespace: a.namespace},
	}}
	if err := c.Create(ctx, sar); err != nil {
		t.Fatalf("SubjectAccessReview %s: %v", a, err)
	}
	if sar.Status.Allowed != a.allowed {
		t.Errorf("%s may %s: %t, want %t (%s)", user, a, sar.Status.Allowed, a.allowed, sar.Status.Reason)
	}
}

func cutSub(r string) (string, string, bool) {
	for i := range len(r) {
		if r[i] == '/' {
			return r[:i], r[i+1:], true
		}
	}
	return r, "", false
}

// TestShippedRBAC applies deploy/serve/rbac.yaml and
// deploy/crds/acceptance-roles.yaml to a real kube-apiserver with the RBAC
// authorizer and asks it (SubjectAccessReview) what they grant (issue 22):
//   - serve's ServiceAccount can list and watch everything its cached
//     client reads (Acceptances, Pods, Nodes, the workload kinds), get and
//     list Applications and Kustomizations (read uncached), write only the
//     Acceptance status, and create the break-glass expiry Event in
//     flux-system and argocd; it cannot edit an Acceptance's spec or read
//     Secrets;
//   - a tenant's ServiceAccount bound to the built-in `edit` in its
//     namespace (what Flux impersonates with spec.serviceAccountName) can
//     create and patch Acceptances there, not their status and not in
//     another namespace; `admin` the same; `view` can read them and
//     nothing more.
//
// The built-in roles are aggregated by the real kube-controller-manager's
// clusterrole-aggregation controller.
func TestShippedRBAC(t *testing.T) {
	testenv.RequireControllerManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	testenv.StartControllerManager(ctx, t, api)
	c := api.Client
	for _, ns := range []string{namespace, "flux-system", "argocd", "shop", "other"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range readObjects(t, filepath.Join(root, "deploy", "serve", "rbac.yaml"), filepath.Join(root, "deploy", "crds", "acceptance-roles.yaml")) {
		if o.GetKind() == "Role" || o.GetKind() == "RoleBinding" {
			o.SetNamespace(namespace) // deploy/serve's kustomization namespace
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for role, verb := range map[string]string{"admin": "patch", "edit": "patch", "view": "watch"} {
		aggregated(t, ctx, c, role, verb)
	}

	serve := "system:serviceaccount:" + namespace + ":throughline-serve"
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	var want []access
	for _, r := range []struct{ group, resource string }{
		{"throughline.dev", "acceptances"}, {"", "pods"}, {"", "nodes"}, {"apps", "deployments"}, {"apps", "replicasets"},
		{"apps", "statefulsets"}, {"apps", "daemonsets"}, {"apps", "controllerrevisions"}, {"batch", "jobs"},
		{"", "services"}, {"discovery.k8s.io", "endpointslices"},
	} {
		for _, v := range []string{"get", "list", "watch"} {
			want = append(want, access{v, r.group, r.resource, "", true})
		}
	}
	for _, r := range []struct{ group, resource string }{{"argoproj.io", "applications"}, {"kustomize.toolkit.fluxcd.io", "kustomizations"}} {
		want = append(want, access{"get", r.group, r.resource, "", true}, access{"list", r.group, r.resource, "", true},
			access{"patch", r.group, r.resource, "flux-system", false})
	}
	want = append(want,
		access{"get", "argoproj.io", "rollouts", "shop", true},
		access{"get", "batch", "cronjobs", "shop", true},
		access{"update", "throughline.dev", "acceptances/status", "shop", true},
		access{"patch", "throughline.dev", "acceptances/status", "shop", true},
		access{"create", "", "events", "flux-system", true},
		access{"create", "", "events", "argocd", true},
		access{"create", "coordination.k8s.io", "leases", namespace, true},
		access{"update", "throughline.dev", "acceptances", "shop", false},
		access{"patch", "throughline.dev", "acceptances", "shop", false},
		access{"create", "throughline.dev", "acceptances", "shop", false},
		access{"get", "", "secrets", "shop", false},
		access{"create", "batch", "jobs", "shop", true}, // runtime checks' smoke tests
		access{"delete", "batch", "jobs", "shop", true},
		access{"update", "batch", "jobs", "shop", false},
		access{"get", "", "secrets", namespace, false}, // only the Prometheus Secret, by name (below)
		access{"list", "", "secrets", "", false},
		access{"create", "coordination.k8s.io", "leases", "shop", false},
	)
	for _, a := range want {
		review(t, ctx, c, serve, saGroups, a)
	}
	for name, allowed := range map[string]bool{"throughline-prometheus": true, "throughline-registry-credentials": false} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: serve, Groups: saGroups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: namespace, Name: name}}}
		if err := c.Create(ctx, sar); err != nil || sar.Status.Allowed != allowed {
			t.Errorf("serve may get Secret %s/%s: %t (%v), want %t", namespace, name, sar.Status.Allowed, err, allowed)
		}
	}

	// The tenant: Flux impersonates shop's flux-apply ServiceAccount, bound
	// to edit in shop; a reader is bound to view.
	bind := func(name, role string, subject rbacv1.Subject) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{subject}}
		if err := c.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	bind("flux-apply", "edit", rbacv1.Subject{Kind: "ServiceAccount", Name: "flux-apply", Namespace: "shop"})
	bind("reader", "view", rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "reader"})
	bind("owner", "admin", rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "owner"})
	tenant := "system:serviceaccount:shop:flux-apply"
	tenantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"}
	for _, a := range []access{
		{"get", "throughline.dev", "acceptances", "shop", true},
		{"create", "throughline.dev", "acceptances", "shop", true},
		{"patch", "throughline.dev", "acceptances", "shop", true},
		{"update", "throughline.dev", "acceptances", "shop", true},
		{"delete", "throughline.dev", "acceptances", "shop", true},
		{"patch", "throughline.dev", "acceptances/status", "shop", false},
		{"update", "throughline.dev", "acceptances/status", "shop", false},
		{"patch", "throughline.dev", "acceptances", "other", false},
	} {
		review(t, ctx, c, tenant, tenantGroups, a)
	}
	for _, a := range []access{
		{"list", "throughline.dev", "acceptances", "shop", true},
		{"watch", "throughline.dev", "acceptances", "shop", true},
		{"patch", "throughline.dev", "acceptances", "shop", false},
		{"list", "throughline.dev", "acceptances", "other", false},
	} {
		review(t, ctx, c, "reader", []string{"system:authenticated"}, a)
	}
	for _, a := range []access{
		{"create", "throughline.dev", "acceptances", "shop", true},
		{"delete", "throughline.dev", "acceptances", "shop", true},
		{"patch", "throughline.dev", "acceptances/status", "shop", false},
		{"create", "throughline.dev", "acceptances", "other", false},
	} {
		review(t, ctx, c, "owner", []string{"system:authenticated"}, a)
	}
}

// aggregated waits until kube-controller-manager's clusterrole-aggregation
// controller has copied the Acceptance rules of
// deploy/crds/acceptance-roles.yaml into the built-in ClusterRole name, up
// to the rule granting verb (the roles are created one after the other).
func aggregated(t *testing.T, ctx context.Context, c client.Client, name, verb string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var role rbacv1.ClusterRole
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &role); err != nil {
			t.Fatalf("ClusterRole %s (bootstrapped by kube-apiserver): %v", name, err)
		}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, "throughline.dev") && slices.Contains(r.Resources, "acceptances") && slices.Contains(r.Verbs, verb) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("arrow acceptance-roles.yaml -> ClusterRole %s: no rule to %s Acceptances after 1m (%d rules)", name, verb, len(role.Rules))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("arrow acceptance-roles.yaml -> ClusterRole %s: %v", name, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
