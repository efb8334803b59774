package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EnvRedisBin names the redis-server binary (default: redis-server on PATH;
// Debian's package redis-server).
const EnvRedisBin = "THROUGHLINE_REDIS_BIN"

// ArgoCDControlPlaneOptions configures [StartArgoCDControlPlane].
type ArgoCDControlPlaneOptions struct {
	// PluginYAML is the ConfigManagementPlugin file the cmp-server serves
	// (the repository's plugin.yaml).
	PluginYAML string
	// PluginPath is prepended to the cmp-server's PATH: the directory of the
	// throughline binary the plugin runs.
	PluginPath string
	// ConfigData is merged into argocd-cm (e.g. the Acceptance's Lua health
	// from deploy/argocd/argocd-cm-health.yaml).
	ConfigData map[string]string
	// AppResync is the controller's --app-resync (default 180 s, Argo CD's).
	AppResync time.Duration
	// Resident runs the sidecar's resident renderer (PluginPath's
	// `throughline cmp serve`) beside the cmp-server, whose plugin then
	// renders through it (THROUGHLINE_RESIDENT_DIR), as
	// deploy/argocd/repo-server-sidecar.yaml does.
	Resident bool
}

// ArgoCDControlPlane is Argo CD's application controller, repo-server and
// cmp-server (the multi-call argocd binary) with Redis, against an
// [APIServer] that is also the in-cluster destination.
type ArgoCDControlPlane struct {
	// Namespace is Argo CD's namespace ("argocd"): Applications,
	// AppProjects, argocd-cm and argocd-secret live there.
	Namespace string
	// RedisAddr and RepoServerAddr are the 127.0.0.1 addresses of Redis and
	// the repo-server's gRPC endpoint.
	RedisAddr, RepoServerAddr string
	// MetricsURL is the application controller's Prometheus endpoint.
	MetricsURL string
	// ResidentServed counts the generates the resident renderer answered
	// (nil without opts.Resident).
	ResidentServed func() int
}

// StartArgoCDControlPlane installs Argo CD's Application and AppProject CRDs
// into api (those not served yet), creates what argocd-server and the
// install manifests would (the argocd namespace, argocd-cm with
// opts.ConfigData, argocd-secret with server.secretkey, the default
// AppProject allowing everything), and starts, each with its real flags and
// stopped when the test ends:
//
//   - Redis (Debian's redis-server) on 127.0.0.1, no persistence;
//   - argocd-cmp-server serving opts.PluginYAML on a unix socket in a
//     directory shared with the repo-server (ARGOCD_PLUGINSOCKFILEPATH);
//   - argocd-repo-server (gRPC and metrics on 127.0.0.1, no TLS, no GPG);
//   - argocd-application-controller with ARGOCD_FAKE_IN_CLUSTER=true, so
//     https://kubernetes.default.svc is api itself.
//
// The application controller binds its metrics port on 0.0.0.0 (hard-coded
// in v2.14): like [StartArgoCDNotifications] it runs only inside
// hack/netns-exec.sh's private network namespace; skipped elsewhere, failed
// when CI=true. No argocd-server runs: refresh an Application with the
// argocd.argoproj.io/refresh annotation.
func StartArgoCDControlPlane(t testing.TB, api *APIServer, opts ArgoCDControlPlaneOptions) *ArgoCDControlPlane {
	t.Helper()
	dir, redisBin := RequireArgoCDControlPlane(t)
	bin := filepath.Join(dir, "argocd")
	const ns = "argocd"
	ctx, cancel := startContext(t)
	defer cancel()
	logVersions(ctx, t, bin, redisBin)
	if err := installMissingCRDs(ctx, api, dir, "applications", "appprojects"); err != nil {
		t.Fatalf("argocd control plane: %v", err)
	}
	if err := argoCDInstall(ctx, api, ns, opts.ConfigData); err != nil {
		t.Fatalf("argocd control plane: %v", err)
	}
	cp := &ArgoCDControlPlane{Namespace: ns}

	t0 := time.Now()
	ports, err := startServer(ctx, t, "redis-server", redisBin, environ(nil), 1,
		func(p []int) []string {
			return []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(p[0]), "--save", "", "--appendonly", "no",
				"--protected-mode", "yes", "--dir", t.TempDir()}
		},
		func(ctx context.Context, p []int) error { return redisPing(ctx, "127.0.0.1:"+strconv.Itoa(p[0])) })
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	cp.RedisAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	t.Logf("redis-server up in %s at %s", time.Since(t0).Round(time.Millisecond), cp.RedisAddr)

	// A unix socket path must stay under 108 bytes: t.TempDir's can be longer.
	sockDir, err := os.MkdirTemp("", "argocd-cmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) }) // after the servers stopped
	var residentEnv []string
	if opts.Resident {
		var dir string
		dir, cp.ResidentServed = startResident(t, opts.PluginPath)
		residentEnv = []string{"THROUGHLINE_RESIDENT_DIR=" + dir}
	}
	startCMPServer(ctx, t, bin, sockDir, opts, residentEnv)
	startRepoServer(ctx, t, bin, sockDir, cp)
	startApplicationController(ctx, t, api, bin, cp, opts)
	return cp
}

// startCMPServer starts argocd-cmp-server with opts.PluginYAML and waits for
// its socket.
func startCMPServer(ctx context.Context, t testing.TB, bin, sockDir string, opts ArgoCDControlPlaneOptions, extraEnv []string) {
	t.Helper()
	b, err := os.ReadFile(opts.PluginYAML)
	if err != nil {
		t.Fatalf("argocd-cmp-server: %v", err)
	}
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "plugin.yaml"), b, 0o644); err != nil {
		t.Fatalf("argocd-cmp-server: %v", err)
	}
	env := environ(append([]string{
		"ARGOCD_BINARY_NAME=argocd-cmp-server", "ARGOCD_PLUGINSOCKFILEPATH=" + sockDir,
		"PATH=" + opts.PluginPath + string(os.PathListSeparator) + os.Getenv("PATH"),
		"THROUGHLINE_CACHE_DIR=" + t.TempDir(),
	}, extraEnv...), "ARGOCD_", "PATH", "THROUGHLINE_CACHE_DIR", "THROUGHLINE_RESIDENT_DIR")
	t0 := time.Now()
	_, err = startServer(ctx, t, "argocd-cmp-server", bin, env, 0,
		func([]int) []string {
			return []string{"--config-dir-path=" + cfgDir, "--loglevel=debug", "--logformat=text"}
		},
		func(context.Context, []int) error {
			m, err := filepath.Glob(filepath.Join(sockDir, "*.sock"))
			if err != nil || len(m) == 0 {
				return fmt.Errorf("no plugin socket in %s yet", sockDir)
			}
			return nil
		})
	if err != nil {
		t.Fatalf("start argocd-cmp-server: %v", err)
	}
	t.Logf("argocd-cmp-server up in %s, plugin socket in %s", time.Since(t0).Round(time.Millisecond), sockDir)
}

// startResident starts `throughline cmp serve` of pluginPath on a fresh
// private directory, waits for its socket and returns the directory and a
// count of the generates it answered (its debug log).
func startResident(t testing.TB, pluginPath string) (string, func() int) {
	t.Helper()
	dir, err := os.MkdirTemp("", "tl-resident-") // 0700; a short socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	logs := &syncBuffer{}
	cmd := exec.Command(filepath.Join(pluginPath, "throughline"), "cmp", "serve", "--dir", dir, "--metrics-addr", "",
		"--cache-dir", t.TempDir(), "--log-level", "debug", "--log-format", "json")
	cmd.Env = environ(nil, "THROUGHLINE_RESIDENT_DIR")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start throughline cmp serve: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("throughline cmp serve (last lines):\n%s", logs.tail())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(filepath.Join(dir, "render.sock")); err == nil && fi.Mode()&os.ModeSocket != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("throughline cmp serve: no socket in %s after 30 s:\n%s", dir, logs.tail())
		}
	}
	return dir, func() int { return strings.Count(logs.String(), `"message":"generate"`) }
}

// startRepoServer starts argocd-repo-server on 127.0.0.1 against Redis and
// the cmp-server's socket directory.
func startRepoServer(ctx context.Context, t testing.TB, bin, sockDir string, cp *ArgoCDControlPlane) {
	t.Helper()
	env := environ([]string{
		"ARGOCD_BINARY_NAME=argocd-repo-server", "ARGOCD_PLUGINSOCKFILEPATH=" + sockDir,
		"ARGOCD_GPG_ENABLED=false", "TMPDIR=" + t.TempDir(),
	}, "ARGOCD_", "TMPDIR", "KUBECONFIG")
	t0 := time.Now()
	ports, err := startServer(ctx, t, "argocd-repo-server", bin, env, 2,
		func(p []int) []string {
			return []string{
				"--address=127.0.0.1", "--port=" + strconv.Itoa(p[0]),
				"--metrics-address=127.0.0.1", "--metrics-port=" + strconv.Itoa(p[1]),
				"--redis=" + cp.RedisAddr, "--disable-tls",
				"--loglevel=debug", "--logformat=text",
			}
		},
		func(ctx context.Context, p []int) error {
			return expectStatus("http://127.0.0.1:"+strconv.Itoa(p[1])+"/metrics", http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start argocd-repo-server: %v", err)
	}
	cp.RepoServerAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	t.Logf("argocd-repo-server up in %s at %s", time.Since(t0).Round(time.Millisecond), cp.RepoServerAddr)
}

// startApplicationController starts argocd-application-controller with the
// in-cluster destination faked to api.
func startApplicationController(ctx context.Context, t testing.TB, api *APIServer, bin string, cp *ArgoCDControlPlane,
	opts ArgoCDControlPlaneOptions,
) {
	t.Helper()
	kubeconfig, err := api.Kubeconfig("argocd-application-controller", cp.Namespace)
	if err != nil {
		t.Fatalf("argocd-application-controller: %v", err)
	}
	resync := opts.AppResync
	if resync <= 0 {
		resync = 180 * time.Second
	}
	env := environ([]string{
		"ARGOCD_BINARY_NAME=argocd-application-controller", "ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + kubeconfig,
	}, "ARGOCD_", "KUBECONFIG")
	t0 := time.Now()
	ports, err := startServer(ctx, t, "argocd-application-controller", bin, env, 1,
		func(p []int) []string {
			return []string{
				"--kubeconfig=" + kubeconfig,
				"--metrics-port=" + strconv.Itoa(p[0]),
				"--repo-server=" + cp.RepoServerAddr, "--repo-server-plaintext",
				"--redis=" + cp.RedisAddr,
				"--app-resync=" + strconv.Itoa(int(resync.Seconds())),
				"--status-processors=2", "--operation-processors=2",
				"--loglevel=debug", "--logformat=text",
			}
		},
		func(ctx context.Context, p []int) error {
			return expectStatus("http://127.0.0.1:"+strconv.Itoa(p[0])+"/metrics", http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start argocd-application-controller: %v", err)
	}
	cp.MetricsURL = "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"
	t.Logf("argocd-application-controller up in %s, metrics at %s", time.Since(t0).Round(time.Millisecond), cp.MetricsURL)
}

// RequireArgoCDControlPlane skips the test (fails it when CI=true) unless
// [StartArgoCDControlPlane] can run: the argocd binary and CRDs are in the
// cache (hack/argocd.sh), redis-server is installed and the test runs in
// hack/netns-exec.sh's private network namespace. It returns the asset
// directory and the redis-server binary.
func RequireArgoCDControlPlane(t testing.TB) (string, string) {
	t.Helper()
	dir := argoCDDir(t)
	redisBin, ok := binary(EnvRedisBin, "redis-server")
	if !ok {
		missing(t, "redis-server not found ("+EnvRedisBin+" or PATH)", "apt-get install -y redis-server")
	}
	if os.Getenv(EnvNetNS) != "1" {
		missing(t, "argocd-application-controller binds its metrics port on 0.0.0.0 and runs only in a private network namespace",
			"go test -exec \"$PWD/hack/netns-exec.sh\" ... (as root)")
	}
	return dir, redisBin
}

// Metric returns the value of one series of the application controller's
// metrics; 0 when the series is absent.
func (cp *ArgoCDControlPlane) Metric(ctx context.Context, series string) (float64, error) {
	return metric(ctx, "argocd-application-controller", cp.MetricsURL, series)
}

// logVersions logs the version of every component started here.
func logVersions(ctx context.Context, t testing.TB, argocd, redis string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, argocd, "version", "--client", "--short")
	cmd.Env = environ([]string{"ARGOCD_BINARY_NAME=argocd", "HOME=" + t.TempDir()}, "ARGOCD_", "HOME")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v: %s", argocd, err, out)
	}
	t.Logf("argocd-application-controller, argocd-repo-server, argocd-cmp-server: %s", strings.TrimSpace(string(out)))
	out, err = exec.CommandContext(ctx, redis, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v: %s", redis, err, out)
	}
	t.Logf("redis: %s", strings.TrimSpace(string(out)))
}

// installMissingCRDs installs those of Argo CD's CRDs (plural names) the API
// server does not serve yet.
func installMissingCRDs(ctx context.Context, api *APIServer, dir string, names ...string) error {
	var paths []string
	for _, name := range names {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		err := api.Client.Get(ctx, types.NamespacedName{Name: name + ".argoproj.io"}, crd)
		switch {
		case apierrors.IsNotFound(err):
			paths = append(paths, filepath.Join(dir, "crds", strings.TrimSuffix(name, "s")+"-crd.yaml"))
		case err != nil:
			return fmt.Errorf("read CRD %s.argoproj.io: %w", name, err)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return api.InstallCRDs(ctx, paths...)
}

// argoCDInstall creates the namespace, argocd-cm, argocd-secret and the
// default AppProject, as Argo CD's install manifests and argocd-server would.
func argoCDInstall(ctx context.Context, api *APIServer, ns string, cm map[string]string) error {
	partOf := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "argocd-cm", Labels: partOf}, Data: cm},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "argocd-secret", Labels: partOf},
			// argocd-server generates it on first start; the controller
			// only needs it to exist. A test value, not a secret.
			Data: map[string][]byte{"server.secretkey": []byte("throughline-e2e-not-a-secret")},
		},
	}
	for _, o := range objs {
		if err := api.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s/%s: %w", o, ns, o.GetName(), err)
		}
	}
	proj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"namespace": ns, "name": "default"},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	if err := api.Client.Create(ctx, proj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create AppProject %s/default: %w", ns, err)
	}
	return nil
}

// redisPing sends PING to a Redis server and expects +PONG.
func redisPing(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("redis %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }() // a readiness probe: the answer was read or the error reported
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return fmt.Errorf("redis %s: PING: %w", addr, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("redis %s: PING: %w", addr, err)
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("redis %s: PING answered %q", addr, strings.TrimSpace(line))
	}
	return nil
}
