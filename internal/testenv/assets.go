package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Versions of the assets the hack/ scripts build. They name the default cache
// directories, used when the environment variable of an asset is not set; keep
// them in step with the scripts.
const (
	K8sVersion             = "1.37.2"
	EtcdVersion            = "3.7.0"
	NotificationCtlVersion = "1.9.0"
	ArgoCDVersion          = "2.14.21"
	KustomizeCtlVersion    = "1.9.6"
	PrometheusOpVersion    = "0.85.0"
)

// Environment variables naming the assets (hack/e2e-assets.sh prints them).
const (
	EnvKubebuilderAssets = "KUBEBUILDER_ASSETS"          // dir with kube-apiserver and etcd
	EnvRegistryBin       = "THROUGHLINE_REGISTRY_BIN"    // docker-registry binary
	EnvHtpasswdBin       = "THROUGHLINE_HTPASSWD_BIN"    // htpasswd binary (apache2-utils)
	EnvNotificationDir   = "THROUGHLINE_NC_DIR"          // dir with notification-controller and crds/
	EnvArgoCDDir         = "THROUGHLINE_ARGOCD_DIR"      // dir with argocd and crds/
	EnvFluxCRDs          = "THROUGHLINE_FLUX_CRDS"       // dir with Flux's Kustomization CRD
	EnvPrometheusCRDs    = "THROUGHLINE_PROMETHEUS_CRDS" // dir with the Prometheus Operator's ServiceMonitor CRD
	EnvCache             = "THROUGHLINE_CACHE"           // cache root of the hack/ scripts
	EnvNetNS             = "THROUGHLINE_PRIVATE_NETNS"   // "1" when hack/netns-exec.sh runs the tests
)

// InCI reports whether the tests run in CI (CI=true), where a missing server
// fails the test instead of skipping it.
func InCI() bool { return os.Getenv("CI") == "true" }

// missing skips the test (fails it when CI=true) because a server's binary or
// data is not there; build names the command that provides it.
func missing(t testing.TB, what, build string) {
	t.Helper()
	msg := fmt.Sprintf("%s; build it with: %s (or: make e2e-assets, then eval \"$(hack/e2e-assets.sh)\")", what, build)
	if InCI() {
		t.Fatalf("CI=true and %s", msg)
	}
	t.Skip(msg)
}

// cacheDir is where the hack/ scripts put the asset name-version.
func cacheDir(name, version string) string {
	root := os.Getenv(EnvCache)
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		root = filepath.Join(home, ".cache", "throughline")
	}
	return filepath.Join(root, name+"-"+version)
}

// assetDir returns the directory named by env, else the default cache dir.
func assetDir(env, name, version string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	return cacheDir(name, version)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// binary finds a program: the path in env if set, else name on PATH.
func binary(env, name string) (string, bool) {
	if p := os.Getenv(env); p != "" {
		return p, isExecutable(p)
	}
	p, err := exec.LookPath(name)
	return p, err == nil
}

// KubebuilderAssets returns the directory with kube-apiserver and etcd, or
// skips the test (fails it in CI) when they are not built.
func KubebuilderAssets(t testing.TB) string {
	t.Helper()
	dir := assetDir(EnvKubebuilderAssets, "k8s", K8sVersion+"-etcd-"+EtcdVersion)
	if !isExecutable(filepath.Join(dir, "kube-apiserver")) || !isExecutable(filepath.Join(dir, "etcd")) {
		missing(t, fmt.Sprintf("kube-apiserver and etcd not found in %s (%s)", dir, EnvKubebuilderAssets), "hack/k8s-assets.sh")
	}
	return dir
}

// FluxCRDs returns the directory with Flux's Kustomization CRD, or skips the
// test (fails it in CI) when it is not there.
func FluxCRDs(t testing.TB) string {
	t.Helper()
	dir := assetDir(EnvFluxCRDs, "flux-crds", KustomizeCtlVersion)
	if _, err := os.Stat(filepath.Join(dir, "kustomize.toolkit.fluxcd.io_kustomizations.yaml")); err != nil {
		missing(t, fmt.Sprintf("Flux Kustomization CRD not found in %s (%s)", dir, EnvFluxCRDs), "hack/flux-crds.sh")
	}
	return dir
}

// PrometheusCRDs returns the directory with the Prometheus Operator's
// ServiceMonitor CRD, or skips the test (fails it in CI) when it is not there.
func PrometheusCRDs(t testing.TB) string {
	t.Helper()
	dir := assetDir(EnvPrometheusCRDs, "prometheus-crds", PrometheusOpVersion)
	if _, err := os.Stat(filepath.Join(dir, "monitoring.coreos.com_servicemonitors.yaml")); err != nil {
		missing(t, fmt.Sprintf("ServiceMonitor CRD not found in %s (%s)", dir, EnvPrometheusCRDs), "hack/prometheus-crds.sh")
	}
	return dir
}

// NotificationControllerCRDs returns the directory with Flux's
// notification-controller CRDs (Provider, Alert, Receiver), or skips the test
// (fails it in CI) when they are not there.
func NotificationControllerCRDs(t testing.TB) string {
	t.Helper()
	return filepath.Join(notificationControllerDir(t), "crds")
}

// notificationControllerDir returns the dir with the notification-controller
// binary and its crds/.
func notificationControllerDir(t testing.TB) string {
	t.Helper()
	dir := assetDir(EnvNotificationDir, "notification-controller", NotificationCtlVersion)
	if !isExecutable(filepath.Join(dir, "notification-controller")) || !isDir(filepath.Join(dir, "crds")) {
		missing(t, fmt.Sprintf("notification-controller not found in %s (%s)", dir, EnvNotificationDir), "hack/notification-controller.sh")
	}
	return dir
}

// ArgoCDCRDs returns the directory with Argo CD's Application and AppProject
// CRDs, or skips the test (fails it in CI) when they are not there.
func ArgoCDCRDs(t testing.TB) string {
	t.Helper()
	return filepath.Join(argoCDDir(t), "crds")
}

func argoCDDir(t testing.TB) string {
	t.Helper()
	dir := assetDir(EnvArgoCDDir, "argocd", ArgoCDVersion)
	if !isExecutable(filepath.Join(dir, "argocd")) || !isDir(filepath.Join(dir, "crds")) {
		missing(t, fmt.Sprintf("argocd binary not found in %s (%s)", dir, EnvArgoCDDir), "hack/argocd.sh")
	}
	return dir
}

// RepoRoot returns the root of the throughline repository (the directory of
// the main module's go.mod), found upwards from the working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("repo root: %v", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isMainModule(b) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("repo root: no go.mod of module github.com/throughline-dev/throughline above the working directory")
		}
		dir = parent
	}
}

func isMainModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if strings.TrimSpace(line) == "module github.com/throughline-dev/throughline" {
			return true
		}
	}
	return false
}
