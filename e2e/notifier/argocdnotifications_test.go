//go:build e2e

package notifier

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// startArgoCDNotifications installs the shipped deploy/argocd notifications
// Secret (with token) and ConfigMap (its webhook pointed at url) in a new
// namespace ns, starts Argo CD's real notifications controller there and
// creates the default AppProject.
func startArgoCDNotifications(ctx context.Context, t *testing.T, api *testenv.APIServer, root, ns, token, url string,
) *testenv.ArgoCDNotifications {
	t.Helper()
	c := api.Client
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, f := range []string{"argocd-notifications-secret.yaml", "argocd-notifications-cm.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "deploy", "argocd", f))
		must(t, err)
		u := &unstructured.Unstructured{}
		must(t, sigyaml.Unmarshal(raw, &u.Object))
		switch u.GetKind() {
		case "Secret":
			must(t, unstructured.SetNestedField(u.Object, token, "stringData", "throughline-token"))
		case "ConfigMap":
			svc, _, _ := unstructured.NestedString(u.Object, "data", "service.webhook.throughline")
			svc = strings.Replace(svc, "http://throughline-notifier.throughline-system.svc:8443", url, 1)
			must(t, unstructured.SetNestedField(u.Object, svc, "data", "service.webhook.throughline"))
		}
		must(t, c.Create(ctx, u))
	}
	nc := testenv.StartArgoCDNotifications(t, api, testenv.ArgoCDNotificationsOptions{Namespace: ns})
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": ns},
		"spec":     map[string]any{"sourceRepos": []any{"*"}, "destinations": []any{map[string]any{"server": "*", "namespace": "*"}}},
	}}))
	return nc
}
