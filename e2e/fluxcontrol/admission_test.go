//go:build e2e

package fluxcontrol

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
)

// frozen is the message of the admission policy that denies changing the
// checkout Deployment's image in staging.
const frozen = "checkout's image is frozen"

// TestFluxAdmissionDenialWaits is issue 41's trial with the real Flux
// controllers: a ValidatingAdmissionPolicy denies the Deployment update,
// so kustomize-controller's dry-run fails (ReconciliationFailed) and it
// applies nothing: the live Acceptance still declares the previous
// rendered hash. The notifier answers the error event "wait" (the record
// stays RECONCILING); once the policy is removed Flux applies, the verifier
// verifies and the promotion is ACCEPTED. Then, with a reconcileDeadline
// of 20s, the same denial is HALTED by the resync once the deadline has
// passed, naming the controller's message, and the same digest promoted
// again (attempt 2) reaches ACCEPTED once the denial is lifted. Before the fix the first error
// event HALTED the promotion ("Flux did not apply the committed
// Acceptance", class render).
func TestFluxAdmissionDenialWaits(t *testing.T) {
	l := newLab(t)

	// 1. Denied, then lifted: ACCEPTED.
	l.tip()
	l.freeze(true)
	l.pin(stagingEnv, "1.5.0", l.b)
	desired := l.g.commit("ci: checkout 1.5.0 (B) in staging")
	id := l.reconciling(stagingEnv, "1.5.0", l.b, 1, desired)
	l.g.commit("promotion: " + id + " RECONCILING")
	l.g.git("push", "-q", "origin", "main")
	l.denied(stagingEnv, "arrow denied apply -> Kustomization ReconciliationFailed")
	l.waited(desired, "arrow ReconciliationFailed -> notifier waits")
	if rec := l.recordAt(l.tip(), "staging"); rec.PromotionID != id || rec.State != promotion.Reconciling {
		t.Fatalf("arrow denied apply -> record stays RECONCILING: %s %s %q", rec.PromotionID, rec.State, rec.Reason)
	}
	l.freeze(false)
	l.applied(stagingEnv, l.b, "arrow denial lifted -> staging applies B")
	l.roll(stagingEnv, l.b)
	ev, _ := l.evidence(stagingEnv, id, "arrow denial lifted -> staging ACCEPTED")
	if ev.ArtifactDigest != l.b {
		t.Fatalf("evidence digest %s, want B %s", ev.ArtifactDigest, l.b)
	}

	// 2. Denied until staging's reconcileDeadline: HALTED naming the message.
	l.tip()
	c3 := l.push("1.6.0")
	l.freeze(true)
	l.g.replace("throughline-policy.yaml", "reconcileDeadline: 15m", "reconcileDeadline: 20s")
	l.pin(stagingEnv, "1.6.0", c3)
	desired = l.g.commit("ci: checkout 1.6.0 in staging; staging's reconcileDeadline 20s")
	id = l.reconciling(stagingEnv, "1.6.0", c3, 1, desired)
	l.g.commit("promotion: " + id + " RECONCILING")
	l.g.git("push", "-q", "origin", "main")
	since := time.Now()
	l.denied(stagingEnv, "arrow denied apply (2) -> Kustomization ReconciliationFailed")
	l.waited(desired, "arrow ReconciliationFailed (2) -> notifier waits")
	if rec := l.recordAt(l.tip(), "staging"); rec.PromotionID != id || rec.State != promotion.Reconciling {
		t.Fatalf("arrow denied apply (2) -> record stays RECONCILING before the deadline: %s %s %q", rec.PromotionID, rec.State, rec.Reason)
	}
	time.Sleep(time.Until(since.Add(22 * time.Second)))
	// serve's resync, on its own clone (a second writer of the records).
	work := filepath.Join(t.TempDir(), "resync")
	testenv.Git(t, l.ctx, l.g.env, filepath.Dir(work), "clone", "-q", l.g.remote, work)
	repo, err := gitrepo.Open(l.ctx, work)
	must(t, err)
	dyn, err := dynamic.NewForConfig(l.cfg)
	must(t, err)
	r := &notifier.Resyncer{Proc: &notifier.Processor{Git: &evidence.GitSink{Repo: repo, Branch: "main", Signer: l.g.notifier}, Live: &notifier.KubeAcceptances{Client: dyn}},
		Client: dyn}
	// The resync (or a delivery Flux sends after the deadline) halts it.
	eventually(l.ctx, t, time.Minute, "arrow reconcileDeadline passed -> HALTED", func() string {
		var last string
		for _, res := range r.Once(l.ctx) {
			if res.Environment == "staging" {
				last = fmt.Sprintf("resync: %s %s (%v)", res.Outcome, res.Reason, res.Err)
			}
		}
		raw, tip := l.g.onServer(promotion.RecordPath(accName, "staging"))
		rec, err := promotion.Parse("staging", []byte(raw))
		if err != nil {
			return err.Error()
		}
		if rec.PromotionID == id && rec.State == promotion.Halted {
			return ""
		}
		return fmt.Sprintf("record %s %s at %.12s; %s; deliveries: %s", rec.PromotionID, rec.State, tip, last, l.deliv.summary())
	})
	rec := l.recordAt(l.tip(), "staging")
	if rec.PromotionID != id || rec.State != promotion.Halted || !strings.Contains(rec.Reason, "reconcileDeadline 20s passed") ||
		!strings.Contains(rec.Reason, "ReconciliationFailed") || !strings.Contains(rec.Reason, frozen) {
		t.Fatalf("arrow reconcileDeadline passed -> HALTED naming the controller's message: %s %s %q", rec.PromotionID, rec.State, rec.Reason)
	}
	t.Logf("HALTED: %s", rec.Reason)

	// 3. The same digest again after the HALT: attempt 2 (no overlay edit:
	// the overlay already holds 1.6.0; the record and its evidence are new)
	// reaches ACCEPTED once the denial is lifted.
	l.freeze(false)
	l.tip()
	l.g.replace("throughline-policy.yaml", "reconcileDeadline: 20s", "reconcileDeadline: 15m")
	desired = l.g.commit("policy: staging's reconcileDeadline back to 15m")
	again := l.reconciling(stagingEnv, "1.6.0", c3, 2, desired)
	if again == id {
		t.Fatalf("attempt 2 has the HALTED attempt's id %s", id)
	}
	l.g.commit("promotion: " + again + " RECONCILING (the same digest after " + id + " HALTED)")
	l.g.git("push", "-q", "origin", "main")
	l.applied(stagingEnv, c3, "arrow denial lifted -> staging applies 1.6.0")
	l.roll(stagingEnv, c3)
	if ev, _ = l.evidence(stagingEnv, again, "arrow the same digest after the HALT -> staging ACCEPTED"); ev.ArtifactDigest != c3 {
		t.Fatalf("attempt 2 evidence digest %s, want %s", ev.ArtifactDigest, c3)
	}
}

// freeze creates (on) or deletes (off) a ValidatingAdmissionPolicy and its
// binding that deny any change of the checkout Deployment's image in
// staging's namespace, and waits until the API server enforces it (or no
// longer does), by a server-side dry-run of such a change.
func (l *lab) freeze(on bool) {
	l.t.Helper()
	testenv.FreezeImages(l.ctx, l.t, l.c, stagingEnv.ns, "checkout", frozen, on)
}

// denied asks Flux to reconcile e and waits until its Kustomization
// reports ReconciliationFailed at the clone's commit with the policy's
// message.
func (l *lab) denied(e envOf, arrow string) {
	l.t.Helper()
	want := fluxRevision(l.g.git("rev-parse", "HEAD"))
	l.reconcileNow(srcAPI, "GitRepository", "gitops-env")
	l.reconcileNow(ksAPI, "Kustomization", e.ns)
	defer l.took(time.Now(), arrow)
	eventually(l.ctx, l.t, 2*time.Minute, arrow, func() string {
		u := l.ks(e)
		s, r, m := ready(u)
		if got := nested(u, "status", "lastAttemptedRevision"); s != "False" || r != "ReconciliationFailed" || got != want ||
			!strings.Contains(m, frozen) {
			return fmt.Sprintf("Kustomization at %s, Ready %s %s: %s", got, s, r, m)
		}
		return ""
	})
}

// waited waits until the notifier answered a ReconciliationFailed delivery
// for staging's record desiring desired "wait", naming the controller's
// failure: the record names desired in the wait reason.
func (l *lab) waited(desired, arrow string) {
	l.t.Helper()
	defer l.took(time.Now(), arrow)
	eventually(l.ctx, l.t, 90*time.Second, arrow, func() string {
		for _, d := range l.deliv.list() {
			if d.Environment == "staging" && d.Result == "wait" && d.Err != nil && strings.Contains(d.Err.Error(), "reports ReconciliationFailed") &&
				strings.Contains(d.Err.Error(), frozen) && d.Revision != "" && l.after(desired, d.Revision) {
				return ""
			}
		}
		return "deliveries: " + l.deliv.summary()
	})
}

// after reports whether commit rev is desired or a later commit of the
// Git server's history.
func (l *lab) after(desired, rev string) bool {
	l.g.git("fetch", "-q", "origin")
	cmd := exec.CommandContext(l.ctx, "git", "merge-base", "--is-ancestor", desired, rev)
	cmd.Dir, cmd.Env = l.g.dir, l.g.env
	return cmd.Run() == nil
}
