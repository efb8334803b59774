package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/throughline-dev/throughline/runtimecheck"
)

// ManagerOptions configures [NewManager].
type ManagerOptions struct {
	// Namespaces limits the watches (and so the Acceptances verified) to
	// these namespaces; empty means all.
	Namespaces []string
	// MetricsAddr and ProbeAddr are the listen addresses of the metrics and
	// the /healthz, /readyz endpoints ("0" turns one off).
	MetricsAddr, ProbeAddr string
	// LeaderElection with a Lease named throughline-serve in
	// LeaderElectionNamespace (default: the Pod's namespace). The leader
	// releases the Lease when Start returns (a standby takes over within its
	// retry period, not after the lease duration): the caller must exit once
	// the manager has stopped and run nothing that needs the lease after it.
	LeaderElection          bool
	LeaderElectionNamespace string
	// Registry resolves declared digests.
	Registry Resolver
	// Prometheus evaluates the runtime checks' queries (nil: they are
	// Unverifiable). HTTP checks read Services and EndpointSlices, Job
	// checks create Jobs, through the manager's client.
	Prometheus *runtimecheck.Prometheus
	// Committed compares each Acceptance's checks with the committed ones
	// before any runs (nil: they run, an HTTP probe only in the
	// Acceptance's own namespace).
	Committed CommittedChecks
	// Workers is how many Acceptances are verified concurrently (default 4).
	Workers int
	// Requeue delays, see [Reconciler].
	Resync, PendingWait, MinBackoff, MaxBackoff time.Duration
	// OnResult is told each reconcile's outcome (the caller logs).
	OnResult func(ctx context.Context, key types.NamespacedName, rep *Report, requeue time.Duration, err error)
}

// NewManager builds a controller-runtime manager running the Acceptance
// controller; start it with Start(ctx).
func NewManager(ctx context.Context, cfg *rest.Config, o ManagerOptions) (ctrl.Manager, *Reconciler, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("kubernetes scheme: %w", err)
	}
	co := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if len(o.Namespaces) > 0 {
		co.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			co.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   co,
		Client:                  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        "throughline-serve",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// Safe because serve exits when Start returns (NewManager's doc).
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{MaxConcurrentReconciles: o.Workers, SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("controller manager for %s: %w", cfg.Host, err)
	}
	r := &Reconciler{
		Client:      mgr.GetClient(),
		Verifier:    &Verifier{Client: mgr.GetClient(), Uncached: mgr.GetAPIReader(), Registry: o.Registry},
		Resync:      o.Resync,
		PendingWait: o.PendingWait,
		MinBackoff:  o.MinBackoff,
		MaxBackoff:  o.MaxBackoff,
		OnResult:    o.OnResult,
		Committed:   o.Committed,
		Checks: &runtimecheck.Evaluator{
			Prometheus: o.Prometheus, HTTP: &runtimecheck.Prober{Client: mgr.GetClient()}, Jobs: &runtimecheck.Jobs{Client: mgr.GetClient()},
		},
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return nil, nil, err
	}
	if o.ProbeAddr != "" && o.ProbeAddr != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, nil, fmt.Errorf("healthz check: %w", err)
		}
		ready := func(req *http.Request) error {
			ctx, cancel := context.WithTimeout(req.Context(), time.Second)
			defer cancel()
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				return errors.New("informer caches not synced yet")
			}
			return nil
		}
		if err := mgr.AddReadyzCheck("cache-synced", ready); err != nil {
			return nil, nil, fmt.Errorf("readyz check: %w", err)
		}
	}
	return mgr, r, nil
}
