package testenv

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// ArgoCDApplicationSetController is Argo CD's ApplicationSet controller (the
// multi-call argocd binary run as argocd-applicationset-controller) against
// an [APIServer].
type ArgoCDApplicationSetController struct {
	// Namespace is Argo CD's namespace: the controller watches
	// ApplicationSets there and reads AppProjects from it.
	Namespace string
	// MetricsURL is the controller's Prometheus endpoint.
	MetricsURL string
}

// StartArgoCDApplicationSetController installs Argo CD's Application,
// AppProject and ApplicationSet CRDs into api, starts the ApplicationSet
// controller against it (watching namespace "argocd"; a kubeconfig whose
// context namespace is "argocd" is how v2.14 takes it) and waits until its
// metrics endpoint answers; it stops when the test ends.
//
// No repo-server runs (its address is a closed port): generators that need
// one (Git, plugin, SCM, pull request) fail; the List and Cluster
// generators do not call it. Generated Applications are validated against an
// AppProject in "argocd" (create it) and a destination server URL. The
// metrics, probe and webhook listeners are bound to 127.0.0.1, but the test
// still runs only inside hack/netns-exec.sh's private network namespace
// (like [StartArgoCDNotifications]): skipped elsewhere, failed when CI=true.
func StartArgoCDApplicationSetController(t testing.TB, api *APIServer) *ArgoCDApplicationSetController {
	t.Helper()
	dir := RequireArgoCDApplicationSetController(t)
	const ns = "argocd"
	ctx, cancel := startContext(t)
	defer cancel()
	// The CRDs the API server does not serve yet (envtest would update, and
	// log about, those it has).
	var paths []string
	for _, name := range []string{"applications", "appprojects", "applicationsets"} {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		err := api.Client.Get(ctx, types.NamespacedName{Name: name + ".argoproj.io"}, crd)
		switch {
		case apierrors.IsNotFound(err):
			paths = append(paths, filepath.Join(dir, "crds", strings.TrimSuffix(name, "s")+"-crd.yaml"))
		case err != nil:
			t.Fatalf("argocd-applicationset-controller: CRD %s.argoproj.io: %v", name, err)
		}
	}
	if len(paths) > 0 {
		if err := api.InstallCRDs(ctx, paths...); err != nil {
			t.Fatalf("argocd-applicationset-controller: %v", err)
		}
	}
	kubeconfig, err := api.Kubeconfig("argocd-applicationset-controller", ns)
	if err != nil {
		t.Fatalf("argocd-applicationset-controller: %v", err)
	}
	repoServerPort, err := freePort() // closed: no repo-server
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	// controller-runtime's config loader reads KUBECONFIG (the --kubeconfig
	// flag is Argo CD's own client config; both are set).
	env := environ([]string{"ARGOCD_BINARY_NAME=argocd-applicationset-controller", "KUBECONFIG=" + kubeconfig}, "ARGOCD_", "KUBECONFIG")
	ports, err := startServer(ctx, t, "argocd-applicationset-controller", filepath.Join(dir, "argocd"), env, 3,
		func(p []int) []string {
			return []string{
				"--kubeconfig=" + kubeconfig,
				"--metrics-addr=127.0.0.1:" + strconv.Itoa(p[0]),
				"--probe-addr=127.0.0.1:" + strconv.Itoa(p[1]),
				"--webhook-addr=127.0.0.1:" + strconv.Itoa(p[2]),
				"--argocd-repo-server=127.0.0.1:" + strconv.Itoa(repoServerPort),
				"--repo-server-plaintext",
				"--enable-leader-election=false",
				"--enable-scm-providers=false",
				"--loglevel=debug", "--logformat=text",
			}
		},
		func(ctx context.Context, p []int) error {
			return expectStatus("http://127.0.0.1:"+strconv.Itoa(p[0])+"/metrics", http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start argocd-applicationset-controller: %v", err)
	}
	c := &ArgoCDApplicationSetController{Namespace: ns, MetricsURL: "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"}
	t.Logf("argocd-applicationset-controller up in %s, metrics at %s", time.Since(t0).Round(time.Millisecond), c.MetricsURL)
	return c
}

// Metric returns the value of one series of the controller's metrics, e.g.
// `argocd_appset_reconcile_count{name="web",namespace="argocd"}`; 0 when the
// series is absent.
func (c *ArgoCDApplicationSetController) Metric(ctx context.Context, series string) (float64, error) {
	return metric(ctx, "argocd-applicationset-controller", c.MetricsURL, series)
}

// RequireArgoCDApplicationSetController skips the test (fails it when
// CI=true) unless [StartArgoCDApplicationSetController] can run: the argocd
// binary and the ApplicationSet CRD are in the cache (hack/argocd.sh) and
// the test runs in hack/netns-exec.sh's private network namespace. It
// returns the asset directory.
func RequireArgoCDApplicationSetController(t testing.TB) string {
	t.Helper()
	dir := argoCDDir(t)
	if _, err := os.Stat(filepath.Join(dir, "crds", "applicationset-crd.yaml")); err != nil {
		missing(t, "the ApplicationSet CRD is not in "+dir+" (a cache from before it was kept)", "hack/argocd.sh")
	}
	if os.Getenv(EnvNetNS) != "1" {
		missing(t, "argocd-applicationset-controller runs only in a private network namespace",
			"go test -exec \"$PWD/hack/netns-exec.sh\" ... (as root)")
	}
	return dir
}
