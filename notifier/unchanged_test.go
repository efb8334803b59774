package notifier

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

// argoUnchanged is what Argo CD reports for payments when a merge changes
// nothing live: its last sync operation (Succeeded) is at opRev, and its
// comparison at syncRev has status syncStatus.
func argoUnchanged(opRev, syncRev, syncStatus, health string) []byte {
	b, _ := json.Marshal(ArgoCDPayload{Trigger: "on-deployed", Application: "payments", Namespace: "argocd", Environment: "production",
		Revision: opRev, SyncRevision: syncRev, SyncStatus: syncStatus, Phase: "Succeeded", Health: health})
	return b
}

// TestArgoCDRenderUnchanged (issue 34, item 1): the approved render is
// already live from an earlier commit, so Argo CD runs no sync:
// operationState.syncResult.revision stays at an ancestor of the desired
// commit while status.sync.revision is the desired commit (or a later one)
// and Synced. That is decided as observed at status.sync.revision, with
// the rendered-hash rule of later commits, once Git proves that it
// descends from the desired commit; anything less still waits. Before the
// fix every case waited until the reconcileDeadline HALTED it.
func TestArgoCDRenderUnchanged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		sync   func(f *fixture) string // status.sync.revision
		status string
		live   string // the live Acceptance's rendered hash
		health string
		code   int
		result string
	}{
		{name: "synced at the desired commit", sync: func(f *fixture) string { return f.desired["payments"] }, status: "Synced", live: hashA,
			health: "Healthy", code: 200, result: resultAccepted},
		{name: "synced at a later commit", sync: func(f *fixture) string { return f.tip() }, status: "Synced", live: hashA,
			health: "Healthy", code: 200, result: resultAccepted},
		// Not proven: wait, as before.
		{name: "out of sync", sync: func(f *fixture) string { return f.desired["payments"] }, status: "OutOfSync", live: hashA,
			health: "Healthy", code: 503, result: resultWait},
		{name: "another render live", sync: func(f *fixture) string { return f.desired["payments"] }, status: "Synced", live: hashB,
			health: "Healthy", code: 503, result: resultWait},
		{name: "sync revision unknown to Git", sync: func(*fixture) string { return strings.Repeat("e", 40) }, status: "Synced", live: hashA,
			health: "Healthy", code: 503, result: resultWait},
		{name: "sync revision an ancestor too", sync: func(f *fixture) string { return f.desired["checkout"] }, status: "Synced", live: hashA,
			health: "Healthy", code: 503, result: resultWait},
		{name: "sync revision on another branch", sync: func(f *fixture) string { return f.sideCommit() }, status: "Synced", live: hashA,
			health: "Healthy", code: 503, result: resultWait},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout", "payments")
			live := verified("payments")
			live.RenderedHash, live.Status.RenderedHash = c.live, c.live
			f.live.set("payments", live)
			tip := f.tip()
			// checkout's desired commit is an ancestor of payments' desired one.
			syncRev := c.sync(f)
			code, rep := f.argo(argoUnchanged(f.desired["checkout"], syncRev, c.status, c.health))
			if code != c.code || rep.Result != c.result {
				t.Fatalf("%d %+v, want %d %s", code, rep, c.code, c.result)
			}
			rec, err := promotion.Parse("x", []byte(f.show(promotion.RecordPath("payments", "production"))))
			must(t, err)
			if c.result == resultWait {
				if f.tip() != tip || rec.State != promotion.Reconciling {
					t.Fatalf("a wait wrote to Git: record %s", rec.State)
				}
				return
			}
			evPath := evidence.Path("production", "payments", rec.PromotionID)
			ev, err := evidence.Parse(evPath, []byte(f.show(evPath)))
			must(t, err)
			if rec.State != promotion.Accepted || ev.ObservedRevision != syncRev || rec.Accepted.ObservedRevision != syncRev ||
				ev.RenderedHash != hashA || !strings.Contains(ev.Reason, "Argo CD ran no sync") {
				t.Fatalf("record %s at %s, evidence observed %s hash %s reason %q", rec.State, rec.Accepted.ObservedRevision, ev.ObservedRevision,
					ev.RenderedHash, ev.Reason)
			}
			// The gates' proof accepts the evidence (the same rule as a later commit).
			if why, err := ev.CheckRevisions(context.Background(), f.repo.IsAncestor); err != nil || why != "" {
				t.Fatalf("CheckRevisions: %q %v", why, err)
			}
		})
	}
}

// sideCommit is a commit of another branch (not in main's history),
// pushed to origin and fetched by the notifier's clone.
func (f *fixture) sideCommit() string {
	f.t.Helper()
	dir := f.t.TempDir()
	gittest.Run(f.t, dir, "clone", "-q", f.origin, "w")
	w := dir + "/w"
	gittest.Run(f.t, w, "checkout", "-q", "-b", "side", f.desired["checkout"])
	gittest.Run(f.t, w, "commit", "-q", "--allow-empty", "-m", "side")
	gittest.Run(f.t, w, "push", "-q", "origin", "side")
	return gittest.Run(f.t, w, "rev-parse", "HEAD")
}

// TestResyncArgoCD: the resync reads an Application's status as the
// shipped template renders it: a render unchanged by the merge (no sync
// operation since an ancestor commit, Synced at the desired one) is
// ACCEPTED; a sync operation that Failed is the controller's failure,
// waited for (before the fix it was "neither Succeeded nor Degraded" for
// ever, never reaching the deadline).
func TestResyncArgoCD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gvrs := map[schema.GroupVersionResource]string{ApplicationResource: "ApplicationList", KustomizationResource: "KustomizationList"}
	const p = "apps/payments/overlays/production"
	t.Run("sync failed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, "checkout", "payments")
		stale := verified("payments")
		stale.RenderedHash, stale.Status.RenderedHash = hashB, hashB
		f.live.set("payments", stale)
		st := argoStatus("Failed", "Healthy", f.desired["payments"], f.desired["payments"])
		st["sync"].(map[string]any)["status"] = "OutOfSync"
		st["operationState"].(map[string]any)["message"] = denied
		app := resyncApp("payments", p, nil, st)
		r := &Resyncer{Proc: f.handler.proc, Client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, &app)}
		tip := f.tip()
		res := r.Once(ctx)
		if len(res) != 2 { // checkout has no controller object
			t.Fatalf("%+v", res)
		}
		got := res[1]
		if got.App != "payments" || got.Outcome != ResyncWait || !strings.Contains(got.Reason, "waiting: Application/argocd/payments reports resync") ||
			!strings.Contains(got.Reason, denied) {
			t.Fatalf("%+v, want wait naming the failed sync", got)
		}
		if f.tip() != tip {
			t.Fatal("a wait wrote to Git")
		}
	})
	t.Run("render unchanged", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, "checkout", "payments")
		f.live.set("payments", verified("payments"))
		app := resyncApp("payments", p, nil, argoStatus("Succeeded", "Healthy", f.desired["payments"], f.desired["checkout"]))
		r := &Resyncer{Proc: f.handler.proc, Client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, &app)}
		res := r.Once(ctx)
		if len(res) != 2 || res[1].Outcome != ResyncAccepted {
			t.Fatalf("%+v, want payments accepted", res)
		}
		rec, err := promotion.Parse("x", []byte(f.show(promotion.RecordPath("payments", "production"))))
		must(t, err)
		if rec.State != promotion.Accepted || rec.Accepted.ObservedRevision != f.desired["payments"] {
			t.Fatalf("record %s %+v", rec.State, rec.Accepted)
		}
	})
}

// TestFluxRenderUnchanged: Flux's equivalent needs nothing new:
// kustomize-controller applies every new revision, so a merge that changes
// nothing live leaves lastAppliedRevision at the desired commit or a later
// one, decided by the same rendered-hash rule (a guard, passing before the
// change too).
func TestFluxRenderUnchanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "checkout")
	later := f.tip()
	ks := resyncKs(3, "./apps/checkout/overlays/production", map[string]any{
		"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + later, "lastAttemptedRevision": "main@sha1:" + later,
		"conditions": readyCond("True", "ReconciliationSucceeded"),
	})
	gvrs := map[schema.GroupVersionResource]string{ApplicationResource: "ApplicationList", KustomizationResource: "KustomizationList"}
	r := &Resyncer{Proc: f.handler.proc, Client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, &ks)}
	if res := r.Once(ctx); len(res) != 1 || res[0].Outcome != ResyncAccepted {
		t.Fatalf("%+v, want accepted", res)
	}
	if rec := f.checkoutRecord(); rec.State != promotion.Accepted || rec.Accepted.ObservedRevision != later {
		t.Fatalf("record %s %+v", rec.State, rec.Accepted)
	}
}
