//go:build e2e

package argocdcontrol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
)

// frozenMsg is the message of the admission policy that freezes staging's
// checkout image.
const frozenMsg = "checkout's image is frozen for the release"

// digestB is the artifact the denied promotion moves staging to.
const digestB = "sha256:b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"

// TestArgoCDSyncDeniedWaits is issue 41's first break with the real Argo CD
// control plane: a ValidatingAdmissionPolicy denies the Deployment's new
// image, so Argo CD's automated sync of the promotion ends Failed. Argo CD
// applies what admission lets through (the Acceptance declaring the approved
// render among them) while the Pods still run A. The notifier's resync
// answers "wait" naming Argo CD's message (the record stays RECONCILING);
// once the freeze is lifted and the sync retried (Argo CD 2.14 retries the
// running operation; else argocd app sync), the Pods run B, the Acceptance is verified
// and the promotion is ACCEPTED. A failed sync must not HALT it at once.
func TestArgoCDSyncDeniedWaits(t *testing.T) {
	e, api, remote, _ := stagingAtA(t)
	ctx := e.ctx

	rec, revR, u := e.deniedAtB()
	t.Logf("denied sync: %s; syncResult at %.12s", summary(u), str(u, "status", "operationState", "syncResult", "revision"))
	if msg := str(u, "status", "operationState", "message"); !strings.Contains(msg, frozenMsg) && !strings.Contains(summary(u), frozenMsg) {
		t.Logf("premise: the sync failed without the policy's message in operationState.message: %s", summary(u))
	}
	if img := imageOf(e.deployment()); img != image+":1.4.2@"+digestA {
		t.Fatalf("premise: the denied sync left the Deployment at A; it runs %s", img)
	}

	svc := e.notifierService(api, remote)
	r := svc.Resyncer().Once(ctx)
	if len(r) != 1 || r[0].Outcome != notifier.ResyncWait || !strings.Contains(r[0].Reason, frozenMsg) {
		t.Fatalf("arrow sync denied -> notifier waits: resync pass %+v, want one %s naming the failed sync", r, notifier.ResyncWait)
	}
	if got := e.recordAt(e.remoteTip(remote), "staging"); got.PromotionID != rec.PromotionID || got.State != promotion.Reconciling {
		t.Fatalf("arrow sync denied -> record stays RECONCILING: %s %s %q", got.PromotionID, got.State, got.Reason)
	}
	t.Logf("denied: %s", r[0].Reason)

	// The freeze is lifted. Argo CD's own retry of the running operation
	// applies B; an operation that already ended Failed is retried as a
	// user does with argocd app sync (an operation on the Application).
	testenv.FreezeImages(ctx, t, e.c, appNS, "checkout", frozenMsg, false)
	e.retrySync(revR)
	e.syncedAt("freeze lifted -> sync retried, Succeeded", revR)
	d := e.deployment()
	if img := imageOf(d); img != image+":1.5.0@"+digestB {
		t.Fatalf("arrow sync retried -> live Deployment at B: image %s", img)
	}
	e.rollout(d, "b1", digestB)
	e.waitHealthy("Pods run B -> Acceptance verified -> app Healthy")
	r = svc.Resyncer().Once(ctx)
	if len(r) != 1 || r[0].Outcome != notifier.ResyncAccepted {
		t.Fatalf("arrow freeze lifted -> ACCEPTED: resync pass %+v", r)
	}
	e.checkEvidence(remote, e.remoteTip(remote), rec, revR)
}

// TestArgoCDSyncDeniedHaltsAtDeadline is the rest of issue 41 with the real
// Argo CD control plane: with staging's reconcileDeadline at 20s, a sync
// denied by admission waits before the deadline and is HALTED by the
// resync once it has passed, naming Argo CD's message; the same digest
// promoted again (attempt 2: no overlay edit, a new record) reaches
// ACCEPTED once the denial is lifted. A HALT must not make a digest
// unpromotable in the environment.
func TestArgoCDSyncDeniedHaltsAtDeadline(t *testing.T) {
	e, api, remote, _ := stagingAtA(t)
	ctx := e.ctx
	deadline := func(from, to string) {
		pol := filepath.Join(e.work, "throughline-policy.yaml")
		b, err := os.ReadFile(pol)
		must(t, err)
		if !strings.Contains(string(b), "reconcileDeadline: "+from) {
			t.Fatalf("premise: staging's reconcileDeadline is %s in %s", from, pol)
		}
		must(t, os.WriteFile(pol, []byte(strings.Replace(string(b), "reconcileDeadline: "+from, "reconcileDeadline: "+to, 1)), 0o644))
		e.git("commit", "-q", "-am", "policy: staging's reconcileDeadline "+to)
	}
	deadline("15m", "20s")
	rec, _, _ := e.deniedAtB()

	svc := e.notifierService(api, remote)
	if r := svc.Resyncer().Once(ctx); len(r) != 1 || r[0].Outcome != notifier.ResyncWait {
		t.Fatalf("arrow sync denied, deadline not passed -> notifier waits: resync pass %+v", r)
	}
	time.Sleep(time.Until(rec.History[len(rec.History)-1].At.Add(21 * time.Second)))
	r := svc.Resyncer().Once(ctx)
	if len(r) != 1 || r[0].Outcome != notifier.ResyncHalted || !strings.Contains(r[0].Reason, frozenMsg) {
		t.Fatalf("arrow reconcileDeadline passed -> HALTED naming Argo CD's message: resync pass %+v", r)
	}
	halted := e.recordAt(e.remoteTip(remote), "staging")
	if halted.PromotionID != rec.PromotionID || halted.State != promotion.Halted || !strings.Contains(halted.Reason, "reconcileDeadline 20s passed") {
		t.Fatalf("arrow reconcileDeadline passed -> record HALTED: %s %s %q", halted.PromotionID, halted.State, halted.Reason)
	}
	t.Logf("HALTED: %s", halted.Reason)

	// The same digest again: attempt 2, once the denial is lifted.
	testenv.FreezeImages(ctx, t, e.c, appNS, "checkout", frozenMsg, false)
	e.git("pull", "-q", "--ff-only", "origin", "main")
	deadline("20s", "15m")
	again := e.reconcilingRecord(e.head(), image+":1.5.0", digestB, 2)
	if again.PromotionID == rec.PromotionID {
		t.Fatalf("attempt 2 has the HALTED attempt's id %s", rec.PromotionID)
	}
	rev2 := e.head()
	e.retrySync(rev2)
	refreshed := time.Now()
	e.waitApp("denial lifted -> attempt 2 synced", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		if time.Since(refreshed) > 5*time.Second {
			e.refresh("normal")
			refreshed = time.Now()
		}
		return str(u, "status", "sync", "revision") == rev2 && str(u, "status", "sync", "status") == "Synced" &&
			str(u, "status", "operationState", "phase") == "Succeeded"
	})
	d := e.deployment()
	if img := imageOf(d); img != image+":1.5.0@"+digestB {
		t.Fatalf("arrow denial lifted -> live Deployment at B: image %s", img)
	}
	e.rollout(d, "b1", digestB)
	e.waitHealthy("Pods run B -> Acceptance verified -> app Healthy")
	r = svc.Resyncer().Once(ctx)
	if len(r) != 1 || r[0].Outcome != notifier.ResyncAccepted {
		t.Fatalf("arrow the same digest after the HALT -> ACCEPTED: resync pass %+v", r)
	}
	if got := e.recordAt(e.remoteTip(remote), "staging"); got.PromotionID != again.PromotionID || got.State != promotion.Accepted {
		t.Fatalf("arrow the same digest after the HALT -> attempt 2 ACCEPTED: %s %s", got.PromotionID, got.State)
	}
}

// deniedAtB freezes staging's checkout image by admission, moves staging
// from A to B (the CI commit and attempt 1's RECONCILING record, pushed)
// and waits until Argo CD's automated sync of the record's commit is
// denied: the record, its commit and the Application then.
func (e *env) deniedAtB() (*promotion.Record, string, *unstructured.Unstructured) {
	e.t.Helper()
	testenv.FreezeImages(e.ctx, e.t, e.c, appNS, "checkout", frozenMsg, true)
	kz := filepath.Join(e.work, filepath.FromSlash(stagingKz))
	b, err := os.ReadFile(kz)
	must(e.t, err)
	must(e.t, os.WriteFile(kz, []byte(strings.Replace(string(b), `"1.4.2@`+digestA+`"`, `"1.5.0@`+digestB+`"`, 1)), 0o644))
	e.git("commit", "-q", "-am", "ci: checkout 1.5.0 (B) in staging")
	e.git("push", "-q", "origin", "main")
	rec := e.reconcilingRecord(e.head(), image+":1.5.0", digestB, 1)
	revR := e.head()
	e.refresh("normal")
	u := e.waitApp("record commit -> automated sync denied by admission", 2*time.Minute, func(u *unstructured.Unstructured) bool {
		phase := str(u, "status", "operationState", "phase")
		retries, _, _ := unstructured.NestedInt64(u.Object, "status", "operationState", "retryCount")
		return str(u, "status", "operationState", "operation", "sync", "revision") == revR &&
			(phase == "Failed" || phase == "Error" || phase == "Running" && retries > 0)
	})
	return rec, revR, u
}

// retrySync has Argo CD sync rev when its operation has ended (a Running
// one retries by itself), as a user does with argocd app sync: an
// operation on the Application.
func (e *env) retrySync(rev string) {
	e.t.Helper()
	if phase := str(e.app(), "status", "operationState", "phase"); phase != "Running" {
		op := `{"operation":{"initiatedBy":{"username":"e2e"},"sync":{"revision":"` + rev + `"}}}`
		must(e.t, e.c.Patch(e.ctx, e.app(), client.RawPatch(types.MergePatchType, []byte(op))))
	}
}
