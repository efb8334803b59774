package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zerologr"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/throughline-dev/throughline/breakglass/live"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/committed"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/promql"
	"github.com/throughline-dev/throughline/tracing"
)

// Options are the flags of throughline serve and what it needs from the
// command around it: the cluster and the registry client, whose flags
// every command that talks to them shares. Only AddFlags makes a usable
// Options (the flags' defaults).
type Options struct {
	// Cluster is the API server to watch (the command's --kubeconfig and
	// --context); it is called once, when Run starts.
	Cluster func() (*rest.Config, error)
	// Registry resolves the declared images (the command's registry flags);
	// it is called once, when Run starts.
	Registry func() (*registry.Client, error)

	nf          notifierFlags
	ui          uiFlags
	dm          deliveryFlags
	ck          checkFlags
	namespaces  []string
	metricsAddr string
	// breakglassExpiry watches paused Applications/Kustomizations.
	breakglassExpiry bool
	probeAddr        string
	leaderElect      bool
	leaderNS         string
	resync           time.Duration
	pendingWait      time.Duration
	maxBackoff       time.Duration
	workers          int
}

// AddFlags adds serve's own flags to f (not the cluster's nor the
// registry's: see Options.Cluster and Options.Registry).
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&o.namespaces, "namespace", nil, "watch only these namespaces (repeatable; default: all)")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:8080", `Prometheus metrics address ("0" turns it off)`)
	f.StringVar(&o.probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "/healthz and /readyz address")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader (a Lease) so that only one replica writes status")
	f.StringVar(&o.leaderNS, "leader-election-namespace", "", "namespace of the Lease (default: the Pod's)")
	f.DurationVar(&o.resync, "resync", health.DefaultResync, "re-verify a decided Acceptance this often")
	f.DurationVar(&o.pendingWait, "pending-requeue", health.DefaultPendingWait, "re-verify a pending Acceptance after this long without events")
	f.DurationVar(&o.maxBackoff, "max-backoff", health.DefaultMaxBackoff, "longest wait before asking an unreachable registry again")
	f.IntVar(&o.workers, "workers", 4, "Acceptances verified concurrently")
	f.BoolVar(&o.breakglassExpiry, "breakglass-expiry", true, "raise a metric and a Warning Event when a break-glass pause outlives its expiry")
	o.nf.add(f)
	o.ui.add(f)
	o.dm.add(f)
	o.ck.add(f)
}

// Run checks the flags, starts what they turn on (the notifier, the web
// view, the delivery metrics) and runs the Acceptance controller until ctx
// ends. It logs to log only, and sets controller-runtime's logger to it.
// A flag in error is an exitcode.UsageError.
func (o *Options) Run(ctx context.Context, log zerolog.Logger) error {
	if o.workers < 1 {
		return exitcode.Usagef("--workers %d: want at least 1", o.workers)
	}
	if o.Cluster == nil || o.Registry == nil {
		return errors.New("serve: Options.Cluster and Options.Registry are required")
	}
	cfg, err := o.Cluster()
	if err != nil {
		return err
	}
	reg, err := o.Registry()
	if err != nil {
		return err
	}
	if err := o.ck.load(ctx, cfg); err != nil {
		return err
	}
	log = log.With().Str("component", "serve").Logger()
	ctrl.SetLogger(logr.New(logSink(log)))
	stop, err := o.nf.start(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stop()
	if err := o.ui.start(ctx, cfg, &o.nf, log); err != nil {
		return err
	}
	if err := o.dm.start(ctx, o.metricsAddr, &o.nf, crmetrics.Registry, log); err != nil {
		return err
	}
	cc, err := o.committedChecks(ctx)
	if err != nil {
		return err
	}
	return o.serve(ctx, cfg, reg, cc, log)
}

// committedChecks is what the verifier compares each Acceptance's checks
// with before running them: the GitOps repository of --notifier-repo (nil
// without one: the checks run, an HTTP probe only in the Acceptance's own
// namespace).
func (o *Options) committedChecks(ctx context.Context) (health.CommittedChecks, error) {
	repo, branch, err := o.dm.repository(ctx, &o.nf)
	if err != nil || repo == nil {
		return nil, err
	}
	return &committed.Source{Repo: repo, Tip: tipOf(repo, branch, o.nf.git.url != ""), ParseQuery: promql.Parse}, nil
}

// serve runs the Acceptance controller until ctx ends. With --leader-elect
// the manager releases its Lease when it stops, which is safe only because
// nothing runs after serve returns but the notifier's shutdown (it needs no
// lease) and the process's exit.
func (o *Options) serve(ctx context.Context, cfg *rest.Config, reg health.Resolver, cc health.CommittedChecks, log zerolog.Logger) error {
	mgr, _, err := health.NewManager(ctx, cfg, health.ManagerOptions{
		Namespaces:              o.namespaces,
		MetricsAddr:             o.metricsAddr,
		ProbeAddr:               o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionNamespace: o.leaderNS,
		Registry:                reg,
		Prometheus:              o.ck.prom,
		Committed:               cc,
		Workers:                 o.workers,
		Resync:                  o.resync,
		PendingWait:             o.pendingWait,
		MaxBackoff:              o.maxBackoff,
		OnResult:                logVerdict(log),
	})
	if err != nil {
		return err
	}
	if err := o.nf.addResync(mgr); err != nil {
		return err
	}
	if o.breakglassExpiry {
		if err := addExpiryMonitor(mgr, log); err != nil {
			return err
		}
	}
	log.Info().Str("apiserver", cfg.Host).Strs("namespaces", o.namespaces).Str("metrics", o.metricsAddr).Str("probes", o.probeAddr).
		Msg("starting the Acceptance controller")
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("acceptance controller: %w", err)
	}
	return nil
}

// logVerdict logs every verification of the controller.
func logVerdict(log zerolog.Logger) func(context.Context, types.NamespacedName, *health.Report, time.Duration, error) {
	return func(ctx context.Context, key types.NamespacedName, rep *health.Report, requeue time.Duration, err error) {
		traceID := tracing.TraceID(ctx)
		switch {
		case err != nil:
			log.Warn().Err(err).Str("acceptance", key.String()).Str("traceId", traceID).Dur("requeue", requeue).
				Msg("verification failed, retrying")
		case rep == nil:
			log.Debug().Str("acceptance", key.String()).Msg("gone")
		default:
			ev := log.Info()
			if rep.Outcome == health.Verified || rep.Outcome == health.Pending {
				ev = log.Debug()
			}
			ev.Str("acceptance", key.String()).Str("app", rep.App).Str("environment", rep.Environment).
				Str("renderedHash", rep.RenderedHash).Str("reason", rep.Reason).Int64("generation", rep.Generation).
				Str("traceId", traceID).Dur("requeue", requeue).Msg(rep.Message)
		}
	}
}

// addExpiryMonitor watches break-glass pauses for expiry (a metric and a
// Warning Event).
func addExpiryMonitor(mgr manager.Manager, log zerolog.Logger) error {
	gauge := live.NewExpiryGauge()
	if err := crmetrics.Registry.Register(gauge); err != nil {
		return fmt.Errorf("registering the break-glass expiry metric: %w", err)
	}
	err := mgr.Add(&live.ExpiryMonitor{
		Client: mgr.GetClient(),
		Reader: mgr.GetAPIReader(), // a list a minute: no informer, no watch permission on every Application
		Gauge:  gauge,
		OnError: func(err error) {
			log.Warn().Err(err).Msg("checking break-glass pauses for expiry")
		},
	})
	if err != nil {
		return fmt.Errorf("adding the break-glass expiry monitor: %w", err)
	}
	return nil
}

// logSink is controller-runtime's logr written to zerolog (zerologr: V(0)
// info, V(1) debug), except that a reconcile which lost an
// optimistic-concurrency race ("the object has been modified") is logged
// at debug: it is retried at once with a fresh read, no error of serve's.
func logSink(log zerolog.Logger) logr.LogSink {
	return conflictsAtDebug{zerologr.NewLogSink(&log)}
}

type conflictsAtDebug struct{ logr.LogSink }

func (s conflictsAtDebug) Error(err error, msg string, kv ...any) {
	if apierrors.IsConflict(err) {
		s.Info(1, msg, append(kv, "error", err.Error())...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s conflictsAtDebug) WithValues(kv ...any) logr.LogSink {
	return conflictsAtDebug{s.LogSink.WithValues(kv...)}
}

func (s conflictsAtDebug) WithName(name string) logr.LogSink {
	return conflictsAtDebug{s.LogSink.WithName(name)}
}
