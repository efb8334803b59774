//go:build e2e

package webview

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestWebViewDriftFromAPIServer: the served grid's drift comes from the
// Acceptances of a real kube-apiserver (chainview.KubeLive, what serve
// --ui-live uses). The Acceptances' status is written by the test, as the
// verifier would (the verifier itself is tested in e2e/health): production
// runs another digest for web than Git declares, checkout runs what Git
// declares. Deleting the drifting Acceptance clears the drift at the next
// refresh.
func TestWebViewDriftFromAPIServer(t *testing.T) {
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{
		filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := api.Client
	running := map[string]string{"checkout": chainfixture.Checkout, "web": chainfixture.WebOld}
	for app, digest := range running {
		ns := app + "-production"
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		acc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "throughline.dev/v1alpha1", "kind": "Acceptance",
			"metadata": map[string]any{"name": app, "namespace": ns},
			"spec": map[string]any{"app": app, "environment": "production", "renderedHash": "sha256:" + strings.Repeat("1", 64),
				"objectCount": int64(2), "workloads": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": app,
					"containers": []any{map[string]any{"name": "app", "path": "spec.template.spec.containers[0]", "image": "ghcr.io/x/" + app + "@" + digest,
						"digest": digest}}}}},
		}}
		if err := c.Create(ctx, acc); err != nil {
			t.Fatal(err)
		}
		acc.Object["status"] = map[string]any{"workloads": []any{map[string]any{"kind": "Deployment", "namespace": ns, "name": app, "outcome": "Verified",
			"pods": int64(1), "containers": []any{map[string]any{"name": "app", "digest": digest, "outcome": "Verified",
				"observed": []any{map[string]any{"imageID": "ghcr.io/x/" + app + "@" + digest, "outcome": "Verified", "match": "Exact", "pods": int64(1)}}}}}}}
		if err := c.Status().Update(ctx, acc); err != nil {
			t.Fatal(err)
		}
	}
	f := chainfixture.New(t, example)
	h := &chainview.Handler{Repo: f.Repo, TTL: 100 * time.Millisecond, Live: chainview.KubeLive(func(ctx context.Context, l *unstructured.UnstructuredList) error { return c.List(ctx, l) })}
	url := serveHandler(t, h)
	get := func() string {
		t.Helper()
		resp, err := http.Get(url + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	page := get()
	if want := "drift: runs " + chainfixture.WebOld + ", Git declares " + chainfixture.Web; !strings.Contains(page, want) {
		t.Fatalf("the grid does not say %q", want)
	}
	if !strings.Contains(page, "runs what Git declares") {
		t.Fatal("checkout's cell does not say it runs what Git declares")
	}
	web := &unstructured.Unstructured{}
	web.SetAPIVersion("throughline.dev/v1alpha1")
	web.SetKind("Acceptance")
	web.SetNamespace("web-production")
	web.SetName("web")
	if err := c.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for strings.Contains(get(), "drift: runs "+chainfixture.WebOld) {
		if time.Now().After(deadline) {
			t.Fatal("the drift stayed after its Acceptance was deleted")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
