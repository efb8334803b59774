package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// APIServerOptions configures [StartAPIServer].
type APIServerOptions struct {
	// CRDPaths are CRD files or directories of them, installed before the
	// function returns (and waited for until served).
	CRDPaths []string
	// CRDs are CRD objects to install as well.
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// APIServer is a real kube-apiserver with its etcd, started by envtest.
type APIServer struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a controller-runtime client on Config whose scheme knows the
	// client-go types and CustomResourceDefinition; use unstructured objects
	// for custom resources.
	Client client.Client
	// Scheme is the scheme of Client.
	Scheme *runtime.Scheme

	t   testing.TB
	env *envtest.Environment
}

// StartAPIServer starts kube-apiserver and etcd (from KUBEBUILDER_ASSETS or
// hack/k8s-assets.sh's cache) on 127.0.0.1, installs the CRDs of opts and stops
// both when the test ends. Their logs are printed when the test failed.
// No kubelet or controller-manager runs: a test plays them by writing status.
func StartAPIServer(t testing.TB, opts APIServerOptions) *APIServer {
	t.Helper()
	// controller-runtime (envtest, clients, controllers under test) prints
	// a goroutine trace when its logger was never set; tests read their own
	// servers' logs instead.
	quietControllerRuntime.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	assets := KubebuilderAssets(t)
	for _, p := range opts.CRDPaths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CRD path %s: %v", p, err)
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatalf("scheme: %v", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatalf("scheme: %v", err)
	}

	logs := &syncBuffer{}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        opts.CRDPaths,
		CRDs:                     opts.CRDs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
		Scheme:                   scheme,
	}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.Out, apiServer.Err = prefixed(logs, "kube-apiserver: "), prefixed(logs, "kube-apiserver: ")
	// Without an advertise address kube-apiserver derives one from the default
	// route, which a private network namespace (hack/netns-exec.sh) has not; a
	// loopback one is refused by the endpoint reconciler of the "kubernetes"
	// Service, which no test uses.
	apiServer.Configure().Set("advertise-address", "127.0.0.1")
	apiServer.Configure().Set("endpoint-reconciler-type", "none")
	env.ControlPlane.Etcd = &envtest.Etcd{Out: prefixed(logs, "etcd: "), Err: prefixed(logs, "etcd: ")}

	a := &APIServer{t: t, env: env, Scheme: scheme}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver and etcd log (last %d lines):\n%s", logTailLines, logs.tail())
		}
	})
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop kube-apiserver and etcd: %v", err)
		}
	})
	t0 := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd from %s: %v", assets, err)
	}
	a.Config = cfg
	a.Client, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client for kube-apiserver at %s: %v", cfg.Host, err)
	}
	t.Logf("kube-apiserver %s ready in %s (%d CRDs)", cfg.Host, time.Since(t0).Round(time.Millisecond), len(env.CRDs))
	return a
}

var quietControllerRuntime sync.Once

// InstallCRDs installs the CRDs in paths (files or directories) and waits
// until the API server serves them.
func (a *APIServer) InstallCRDs(ctx context.Context, paths ...string) error {
	opts := envtest.CRDInstallOptions{
		Paths:              paths,
		ErrorIfPathMissing: true,
		MaxTime:            startTimeout,
		Scheme:             a.Scheme,
	}
	// envtest's InstallCRDs has no context: bound it by MaxTime and honour a
	// context that already ended.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("install CRDs %v: %w", paths, err)
	}
	crds, err := envtest.InstallCRDs(a.Config, opts)
	if err != nil {
		return fmt.Errorf("install CRDs %v: %w", paths, err)
	}
	if len(crds) == 0 {
		return fmt.Errorf("install CRDs %v: no CustomResourceDefinition found", paths)
	}
	return nil
}

// Kubeconfig writes a kubeconfig for a new user of the API server (group
// system:masters) whose current context has the given default namespace
// (empty: none), and returns its path. Controllers started by this package run
// with such a kubeconfig.
func (a *APIServer) Kubeconfig(user, namespace string) (string, error) {
	u, err := a.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("add API server user %s: %w", user, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kubeconfig of user %s: %w", user, err)
	}
	kc, err := clientcmd.Load(b)
	if err != nil {
		return "", fmt.Errorf("parse kubeconfig of user %s: %w", user, err)
	}
	if namespace != "" {
		kc.Contexts[kc.CurrentContext].Namespace = namespace
	}
	path := filepath.Join(a.t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("write kubeconfig of user %s: %w", user, err)
	}
	return path, nil
}

// prefixed writes each chunk to w with a prefix (the control plane processes
// log whole lines per write).
func prefixed(w *syncBuffer, prefix string) *prefixWriter { return &prefixWriter{w: w, prefix: prefix} }

type prefixWriter struct {
	w      *syncBuffer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	p.w.buf.WriteString(p.prefix)
	p.w.buf.Write(b)
	return len(b), nil
}
