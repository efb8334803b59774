package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ArgoCDNotificationsOptions configures [StartArgoCDNotifications].
type ArgoCDNotificationsOptions struct {
	// Namespace is Argo CD's namespace, where the controller reads
	// argocd-notifications-cm and argocd-notifications-secret and watches
	// Applications. Default "argocd".
	Namespace string
}

// ArgoCDNotifications is Argo CD's notifications controller (the multi-call
// argocd binary run as argocd-notifications) against an [APIServer].
type ArgoCDNotifications struct {
	// Namespace is the namespace the controller works in.
	Namespace string
	// MetricsURL is the controller's Prometheus endpoint.
	MetricsURL string
}

// StartArgoCDNotifications installs Argo CD's Application and AppProject CRDs
// into api, starts the notifications controller against it and waits until
// its metrics endpoint answers; it stops when the test ends. The test plays
// argocd-application-controller by writing Application status (a merge patch
// on the main resource: the CRD has no status subresource), and must write
// status.reconciledAt >= status.operationState.finishedAt or the controller
// skips the Application. No repo-server runs: templates must not call repo.*.
//
// The controller binds its metrics port on 0.0.0.0 (hard-coded in Argo CD), so
// it only runs where that reaches nothing but this machine's loopback: inside
// the private network namespace of hack/netns-exec.sh (THROUGHLINE_PRIVATE_NETNS=1).
// Elsewhere the test is skipped (failed when CI=true).
func StartArgoCDNotifications(t testing.TB, api *APIServer, opts ArgoCDNotificationsOptions) *ArgoCDNotifications {
	t.Helper()
	dir := RequireArgoCDNotifications(t)
	ns := opts.Namespace
	if ns == "" {
		ns = "argocd"
	}
	ctx, cancel := startContext(t)
	defer cancel()
	if err := api.InstallCRDs(ctx, filepath.Join(dir, "crds", "application-crd.yaml"), filepath.Join(dir, "crds", "appproject-crd.yaml")); err != nil {
		t.Fatalf("argocd-notifications: %v", err)
	}
	// v2.14 ignores --namespace and takes the kubeconfig context's namespace.
	kubeconfig, err := api.Kubeconfig("argocd-notifications-controller", ns)
	if err != nil {
		t.Fatalf("argocd-notifications: %v", err)
	}
	repoServerPort, err := freePort() // closed: nothing resolves argocd-repo-server
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	ports, err := startServer(ctx, t, "argocd-notifications", filepath.Join(dir, "argocd"),
		environ([]string{"ARGOCD_BINARY_NAME=argocd-notifications"}, "ARGOCD_", "KUBECONFIG"), 1,
		func(p []int) []string {
			return []string{
				"--kubeconfig=" + kubeconfig,
				"--namespace=" + ns,
				"--metrics-port=" + strconv.Itoa(p[0]),
				"--argocd-repo-server=127.0.0.1:" + strconv.Itoa(repoServerPort),
				"--argocd-repo-server-plaintext",
				"--loglevel=debug", "--logformat=text",
			}
		},
		func(ctx context.Context, p []int) error {
			return expectStatus("http://127.0.0.1:"+strconv.Itoa(p[0])+"/metrics", http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start argocd-notifications: %v", err)
	}
	a := &ArgoCDNotifications{Namespace: ns, MetricsURL: "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"}
	t.Logf("argocd-notifications up in %s, metrics at %s", time.Since(t0).Round(time.Millisecond), a.MetricsURL)
	return a
}

// RequireArgoCDNotifications skips the test (fails it when CI=true) unless
// [StartArgoCDNotifications] can run: the argocd binary and CRDs are built and
// the test runs in hack/netns-exec.sh's private network namespace. It returns
// the asset directory. Call it first to skip before any other setup.
func RequireArgoCDNotifications(t testing.TB) string {
	t.Helper()
	dir := argoCDDir(t)
	if os.Getenv(EnvNetNS) != "1" {
		missing(t, "argocd-notifications binds its metrics port on 0.0.0.0 and runs only in a private network namespace",
			"go test -exec \"$PWD/hack/netns-exec.sh\" ... (as root)")
	}
	return dir
}

// Metric returns the value of one series of the controller's metrics, e.g.
// `argocd_notifications_trigger_eval_total{name="on-deployed",triggered="true"}`;
// 0 when the series is absent.
func (a *ArgoCDNotifications) Metric(ctx context.Context, series string) (float64, error) {
	return metric(ctx, "argocd-notifications", a.MetricsURL, series)
}

// metric reads one series (name and labels exactly as exposed) from a
// Prometheus text endpoint; 0 when the series is absent.
func metric(ctx context.Context, server, url, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("%s metric %s: %w", server, series, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s metric %s: %w", server, series, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("%s metric %s: %w", server, series, err)
			}
			return f, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s metric %s: %w", server, series, err)
	}
	return 0, nil
}
