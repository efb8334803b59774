package testenv

import (
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

// SourceCtlVersion is the Flux source-controller that hack/flux-controllers.sh
// builds (v1.9.4 to v1.9.6 do not build from the module proxy). The
// kustomize-controller is [KustomizeCtlVersion]; keep both in step with the
// script.
const SourceCtlVersion = "1.9.3"

// EnvFluxControllersDir names the directory with source-controller,
// kustomize-controller and their CRDs (crds/), printed by hack/e2e-assets.sh.
const EnvFluxControllersDir = "THROUGHLINE_FLUX_CONTROLLERS_DIR"

// FluxControllers are Flux's source-controller and kustomize-controller
// running against an [APIServer].
type FluxControllers struct {
	// Versions names each controller and its version, for the test log.
	Versions string
	// StorageURL is source-controller's artifact server
	// (http://127.0.0.1:port), where kustomize-controller fetches artifacts.
	StorageURL string
}

// FluxControllersOptions configures [StartFluxControllers].
type FluxControllersOptions struct {
	// EventsURL, when set, is where both controllers post their events
	// (--events-addr): a [NotificationController]'s EventsURL.
	EventsURL string
}

// RequireFluxControllers skips the test (fails it when CI=true) unless
// source-controller, kustomize-controller and their CRDs are built, and
// returns their directory. Call it first to skip before any other setup.
func RequireFluxControllers(t testing.TB) string {
	t.Helper()
	dir := assetDir(EnvFluxControllersDir, "flux-controllers", "sc"+SourceCtlVersion+"-kc"+KustomizeCtlVersion)
	if !isExecutable(filepath.Join(dir, "source-controller")) || !isExecutable(filepath.Join(dir, "kustomize-controller")) ||
		!isDir(filepath.Join(dir, "crds")) {
		missing(t, fmt.Sprintf("source-controller and kustomize-controller not found in %s (%s)", dir, EnvFluxControllersDir),
			"hack/flux-controllers.sh")
	}
	return dir
}

// StartFluxControllers installs the CRDs of source-controller (GitRepository,
// OCIRepository, HelmRepository, ...) and kustomize-controller
// (Kustomization) into api, starts both controllers with their real flags,
// every listener on 127.0.0.1, each with a kubeconfig of its own (group
// system:masters), and waits until both report ready; they stop when the test
// ends. Both watch all namespaces; leader election is off. The versions are
// logged.
func StartFluxControllers(t testing.TB, api *APIServer, opts FluxControllersOptions) *FluxControllers {
	t.Helper()
	dir := RequireFluxControllers(t)
	ctx, cancel := startContext(t)
	defer cancel()
	if err := api.InstallCRDs(ctx, filepath.Join(dir, "crds")); err != nil {
		t.Fatalf("flux controllers: %v", err)
	}
	fc := &FluxControllers{Versions: fluxVersions(dir)}
	t0 := time.Now()
	storage := t.TempDir() // must exist
	var events []string
	if opts.EventsURL != "" {
		events = []string{"--events-addr=" + opts.EventsURL}
	}
	// Ports: storage (artifact server), metrics, health.
	ports := startFluxController(ctx, t, api, dir, "source-controller", 3, func(p []int) []string {
		return append([]string{
			"--storage-path=" + storage,
			"--storage-addr=127.0.0.1:" + strconv.Itoa(p[0]),
			"--storage-adv-addr=127.0.0.1:" + strconv.Itoa(p[0]),
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(p[1]),
			"--health-addr=127.0.0.1:" + strconv.Itoa(p[2]),
			"--enable-leader-election=false",
			"--log-level=debug",
		}, events...)
	})
	fc.StorageURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	// Ports: metrics, health.
	startFluxController(ctx, t, api, dir, "kustomize-controller", 2, func(p []int) []string {
		return append([]string{
			"--metrics-addr=127.0.0.1:" + strconv.Itoa(p[0]),
			"--health-addr=127.0.0.1:" + strconv.Itoa(p[1]),
			"--enable-leader-election=false",
			"--log-level=debug",
		}, events...)
	})
	t.Logf("%s ready in %s, artifacts at %s", fc.Versions, time.Since(t0).Round(time.Millisecond), fc.StorageURL)
	return fc
}

// startFluxController starts one controller whose last port is its health
// listener and waits for its /readyz.
func startFluxController(ctx context.Context, t testing.TB, api *APIServer, dir, name string, nPorts int,
	args func([]int) []string,
) []int {
	t.Helper()
	kubeconfig, err := api.Kubeconfig(name, "")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ports, err := startServer(ctx, t, name, filepath.Join(dir, name),
		environ([]string{"KUBECONFIG=" + kubeconfig}, "KUBECONFIG"), nPorts, args,
		func(ctx context.Context, p []int) error {
			return expectStatus("http://127.0.0.1:"+strconv.Itoa(p[nPorts-1])+"/readyz", http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return ports
}

// fluxVersions reads the VERSIONS file hack/flux-controllers.sh writes (one
// "<controller> v<version>" per line), else names the pinned versions.
func fluxVersions(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "VERSIONS"))
	if err != nil {
		return "source-controller v" + SourceCtlVersion + ", kustomize-controller v" + KustomizeCtlVersion + " (pinned; no VERSIONS file)"
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", ", ")
}
