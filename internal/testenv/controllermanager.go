package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvKCMBin names the kube-controller-manager binary (hack/kube-controller-manager.sh
// prints it; hack/e2e-assets.sh exports it).
const EnvKCMBin = "THROUGHLINE_KCM_BIN"

// controllers are the kube-controller-manager controllers the e2e suites
// run, and why:
//
//   - deployment-controller: Deployments to ReplicaSets, rollouts, the
//     Deployment's status (what the suites' arrows read);
//   - replicaset-controller: ReplicaSets to Pods, their ready/available counts;
//   - garbage-collector-controller: ownerReferences (scaled-down or replaced
//     ReplicaSets, Pods of a deleted ReplicaSet, objects a prune deletes);
//   - namespace-controller: a deleted namespace's content and finalizer;
//   - serviceaccount-controller: the "default" ServiceAccount of every
//     namespace, as a cluster has it;
//   - serviceaccount-token-controller: tokens of service-account-token
//     Secrets, signed with the API server's service-account key (envtest's);
//   - clusterrole-aggregation-controller: the rules of the built-in admin,
//     edit and view ClusterRoles, the union of every ClusterRole labelled
//     aggregate-to-admin/edit/view (deploy/crds/acceptance-roles.yaml adds
//     Acceptances): what a tenant bound to them may do.
//
// No scheduler, node, endpoint or job controller: nothing in the suites
// reads what they write. Pods are bound to a Node by the played kubelet
// ([StartKubelet]).
var controllers = []string{
	"deployment-controller", "replicaset-controller", "garbage-collector-controller",
	"namespace-controller", "serviceaccount-controller", "serviceaccount-token-controller", "clusterrole-aggregation-controller",
}

// ControllerManager is a real kube-controller-manager running against an
// [APIServer].
type ControllerManager struct {
	// Version is what the binary's --version printed ("Kubernetes v1.37.2").
	Version string
	// HealthURL is its /healthz on 127.0.0.1 (https, self-signed).
	HealthURL string
}

// RequireControllerManager skips the test (fails it when CI=true) unless
// kube-controller-manager is built, and returns its path. Call it first to
// skip before any other setup.
func RequireControllerManager(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvKCMBin)
	if bin == "" {
		bin = filepath.Join(cacheDir("kcm", K8sVersion), "kube-controller-manager")
	}
	if !isExecutable(bin) {
		missing(t, fmt.Sprintf("kube-controller-manager not found at %s (%s)", bin, EnvKCMBin), "hack/kube-controller-manager.sh")
	}
	return bin
}

// StartControllerManager starts kube-controller-manager (the same Kubernetes
// version as api's kube-apiserver) with its real flags against api, as an
// administrator (group system:masters), with only [controllers] enabled,
// leader election off and its secure port (healthz, metrics) on 127.0.0.1,
// and waits (bounded by ctx) until /healthz answers 200; it stops when the
// test ends. Its version is logged.
func StartControllerManager(ctx context.Context, t testing.TB, api *APIServer) *ControllerManager {
	t.Helper()
	bin := RequireControllerManager(t)
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	out, err := exec.CommandContext(sctx, bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v: %s", bin, err, out)
	}
	cm := &ControllerManager{Version: strings.TrimSpace(string(out))}
	kubeconfig, err := api.Kubeconfig("kube-controller-manager", "")
	if err != nil {
		t.Fatalf("kube-controller-manager: %v", err)
	}
	dir := t.TempDir()
	rootCA := filepath.Join(dir, "ca.crt") // published as kube-root-ca.crt and into tokens
	if err := os.WriteFile(rootCA, api.Config.CAData, 0o600); err != nil {
		t.Fatalf("kube-controller-manager: write root CA: %v", err)
	}
	saKey := filepath.Join(api.env.ControlPlane.APIServer.CertDir, "sa-signer.key") // envtest's service-account signing key
	if _, err := os.Stat(saKey); err != nil {
		t.Fatalf("kube-controller-manager: the API server's service-account key: %v", err)
	}
	t0 := time.Now()
	ports, err := startServer(sctx, t, "kube-controller-manager", bin, environ(nil, "KUBECONFIG"), 1,
		func(p []int) []string {
			return []string{
				"--kubeconfig=" + kubeconfig,
				"--authentication-kubeconfig=" + kubeconfig,
				"--authorization-kubeconfig=" + kubeconfig,
				"--controllers=" + strings.Join(controllers, ","),
				"--leader-elect=false",
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(p[0]),
				"--cert-dir=" + dir, // its self-signed serving certificate
				"--service-account-private-key-file=" + saKey,
				"--root-ca-file=" + rootCA,
				"--v=2",
			}
		},
		func(ctx context.Context, p []int) error { return healthz(ctx, healthURL(p[0])) })
	if err != nil {
		t.Fatalf("start kube-controller-manager: %v", err)
	}
	cm.HealthURL = healthURL(ports[0])
	t.Logf("kube-controller-manager (%s) ready in %s, controllers %s", cm.Version, time.Since(t0).Round(time.Millisecond),
		strings.Join(controllers, ","))
	return cm
}

func healthURL(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz" }

// healthz checks that GET url (https, self-signed: not verified) answers 200.
func healthz(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	// Its serving certificate is self-signed (--cert-dir): not verified.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, b)
	}
	return nil
}
