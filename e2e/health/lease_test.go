//go:build e2e

package health

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/registry"
)

// takeover bounds how long the standby replica may wait for the lease once
// the leader stopped: the retry period (2 s) plus slack, well under the
// lease duration (15 s) that a lease never released costs.
const takeover = 6 * time.Second

// TestLeaseReleasedOnShutdown runs two replicas of serve's Acceptance
// controller with leader election (the wiring of `throughline serve
// --leader-elect`), stops the leader as SIGTERM does (its context ends) and
// requires the standby to lead within a few seconds: the leader must release
// its Lease instead of letting it expire.
func TestLeaseReleasedOnShutdown(t *testing.T) {
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	ctx := testContext(t, 2*time.Minute)
	const ns = "throughline-system"
	must(t, api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	newReplica := func() manager.Manager {
		reg, err := registry.New(registry.Options{CacheDir: t.TempDir(), Timeout: 5 * time.Second, Attempts: 1})
		must(t, err)
		mgr, _, err := health.NewManager(ctx, api.Config, health.ManagerOptions{
			MetricsAddr: "0", ProbeAddr: "0", Registry: reg, LeaderElection: true, LeaderElectionNamespace: ns,
		})
		must(t, err)
		return mgr
	}
	// start runs mgr until the returned cancel; wait returns Start's error
	// (once it returned; any number of calls).
	start := func(mgr manager.Manager) (cancel context.CancelFunc, wait func() error) {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		var err error
		go func() { err = mgr.Start(ctx); close(done) }()
		wait = func() error { <-done; return err }
		t.Cleanup(func() { cancel(); _ = wait() })
		return cancel, wait
	}

	leader, standby := newReplica(), newReplica()
	stopLeader, leaderStopped := start(leader)
	select {
	case <-leader.Elected():
	case <-ctx.Done():
		t.Fatal("the first replica never acquired the lease")
	}
	start(standby)
	// The standby must be trying (and failing) to acquire the held lease
	// before the leader stops.
	time.Sleep(3 * time.Second)
	select {
	case <-standby.Elected():
		t.Fatal("the standby leads while the leader holds the lease")
	default:
	}

	stopLeader()
	t0 := time.Now()
	if err := leaderStopped(); err != nil {
		t.Fatalf("leader: %v", err)
	}
	stopped := time.Since(t0)
	select {
	case <-standby.Elected():
		t.Logf("leader stopped in %s, standby leads %s after the stop", stopped.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	case <-time.After(takeover):
		var lease coordinationv1.Lease
		_ = api.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "throughline-serve"}, &lease)
		t.Fatalf("standby not leading %s after the leader stopped: the leader did not release Lease %s/throughline-serve (holder %v)",
			takeover, ns, ptrString(lease.Spec.HolderIdentity))
	}
}

func ptrString(p *string) string {
	if p == nil {
		return "<none>"
	}
	return *p
}
