package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zerologr"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
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
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/committed"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/promql"
)

// serveOptions are the flags of throughline serve.
type serveOptions struct {
	kf          kubeFlags
	rf          registryFlags
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

const serveLong = `Run the verifier as a controller (controller-runtime). It watches Acceptance
objects (acceptances.throughline.dev) and the Pods, Deployments, ReplicaSets,
StatefulSets, DaemonSets and Jobs of the namespaces it is given, waits for each
named workload's rollout to complete (observedGeneration, updated replicas,
only Pods of the current revision), compares every container's imageID with
the declared digest and writes the Acceptance status: conditions Ready
(Verified, RolloutInProgress, ImageMismatch, Unverifiable, WorkloadNotFound,
Invalid), Reconciling and Stalled (kstatus), observedGeneration, the rendered
hash seen, verifiedAt, and per container the observed imageIDs with their match.

Once the images are verified, the runtime checks the Acceptance declares
(spec.checks: Prometheus queries through --prometheus-url, HTTP probes of
in-cluster Services, smoke-test Jobs) run on their intervals: Ready stays
Unknown (Soaking) until the soak passed with every check green, turns False
(CheckFailed) when a check fails its threshold, and False (DeadlineExceeded)
when spec.deadlines.rollout passed before the images verified. A check that
cannot be measured (Prometheus unreachable) is Unverifiable, never Verified.

Argo CD reads the status through the Lua health script of
deploy/argocd/argocd-cm-health.yaml, Flux through kstatus.
Registry lookups are cached by digest (memory and --registry-cache-dir).`

func newServeCommand(g *globals) *cobra.Command {
	var o serveOptions
	cmd := leaf(&cobra.Command{
		Use:   "serve",
		Short: "Run the Acceptance controller: verify live that the cluster runs the declared images",
		Long:  serveLong,
		Example: `  throughline serve --namespace shop --namespace payments
  throughline serve --metrics-bind-address :8080 --health-probe-bind-address :8081`,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g) })
	o.kf.add(cmd)
	o.rf.add(cmd)
	o.nf.add(cmd)
	o.ui.add(cmd)
	o.dm.add(cmd)
	o.ck.add(cmd.Flags())
	return cmd
}

func (o *serveOptions) addFlags(f *pflag.FlagSet) {
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
}

func (o *serveOptions) run(ctx context.Context, g *globals) error {
	if o.workers < 1 {
		return exitcode.Usagef("--workers %d: want at least 1", o.workers)
	}
	cfg, err := o.kf.config()
	if err != nil {
		return err
	}
	reg, err := o.rf.client()
	if err != nil {
		return err
	}
	if err := o.ck.load(ctx, cfg); err != nil {
		return err
	}
	log := g.log.With().Str("component", "serve").Logger()
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
func (o *serveOptions) committedChecks(ctx context.Context) (health.CommittedChecks, error) {
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
func (o *serveOptions) serve(ctx context.Context, cfg *rest.Config, reg health.Resolver, cc health.CommittedChecks, log zerolog.Logger) error {
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
	return func(_ context.Context, key types.NamespacedName, rep *health.Report, requeue time.Duration, err error) {
		switch {
		case err != nil:
			log.Warn().Err(err).Str("acceptance", key.String()).Dur("requeue", requeue).Msg("verification failed, retrying")
		case rep == nil:
			log.Debug().Str("acceptance", key.String()).Msg("gone")
		default:
			ev := log.Info()
			if rep.Outcome == health.Verified || rep.Outcome == health.Pending {
				ev = log.Debug()
			}
			ev.Str("acceptance", key.String()).Str("reason", rep.Reason).Int64("generation", rep.Generation).Dur("requeue", requeue).
				Msg(rep.Message)
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
