package notifier

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

// push commits files (path -> content) on origin's main, as another
// writer of the GitOps repository does.
func (f *fixture) push(files map[string]string) {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "writer")
	gittest.Run(f.t, filepath.Dir(dir), "clone", "-q", f.origin, dir)
	gittest.Write(f.t, dir, files)
	gittest.Run(f.t, dir, "add", "-A")
	gittest.Run(f.t, dir, "commit", "-q", "-m", "writer")
	gittest.Run(f.t, dir, "push", "-q", "origin", "main")
}

func policyWithDeadline(d string) string {
	return "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n  production:\n    cluster: prod\n" +
		"    reconcileDeadline: " + d + "\n"
}

// TestReconcileDeadline: a controller that stays on an old revision (an
// ancestor of the desired commit) is waited for (503) until the
// environment's reconcileDeadline has passed since the record became
// RECONCILING; then the record is HALTED, naming the revision the
// controller is stuck on. Without a deadline the notifier waits for ever.
// The record became RECONCILING at t0+3m; the notifier's clock says t0+1h.
func TestReconcileDeadline(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		policy string
		code   int
		result string
	}{
		{"no policy", "", http.StatusServiceUnavailable, resultWait},
		{"no deadline", "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n  production: {cluster: prod}\n",
			http.StatusServiceUnavailable, resultWait},
		{"deadline not passed", policyWithDeadline("2h"), http.StatusServiceUnavailable, resultWait},
		{"deadline of another environment", strings.Replace(policyWithDeadline("10m"), "production", "staging", 1),
			http.StatusServiceUnavailable, resultWait},
		{"deadline passed", policyWithDeadline("10m"), http.StatusOK, resultHalted},
		// A policy that cannot be used decides nothing.
		{"negative deadline", policyWithDeadline("-10m"), http.StatusInternalServerError, resultError},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout", "payments")
			if c.policy != "" {
				f.push(map[string]string{promotion.PolicyFile: c.policy})
			}
			tip := f.tip()
			// payments' controller still observes checkout's desired commit,
			// an ancestor of payments' desired commit.
			stuck := f.desired["checkout"]
			code, rep := f.flux(fluxBody(t, "payments", stuck, "ReconciliationSucceeded"))
			if code != c.code || rep.Result != c.result {
				t.Fatalf("%d %+v, want %d %s", code, rep, c.code, c.result)
			}
			if c.result != resultHalted {
				if f.tip() != tip {
					t.Fatalf("%s wrote to Git", c.result)
				}
				return
			}
			rec, err := promotion.Parse("x", []byte(f.show(promotion.RecordPath("payments", "production"))))
			must(t, err)
			want := "reconcileDeadline 10m0s passed: Kustomization/flux-system/payments still observes " + stuck +
				", desired " + f.desired["payments"]
			if rec.State != promotion.Halted || !strings.HasPrefix(rec.Reason, want) || rep.Reason != rec.Reason || rep.Commit != f.tip() {
				t.Fatalf("record %s %q, reply %+v, want HALTED %q", rec.State, rec.Reason, rep, want)
			}
			evPath := evidence.Path("production", "payments", rec.PromotionID)
			ev, err := evidence.Parse(evPath, []byte(f.show(evPath)))
			must(t, err)
			if ev.Decision != promotion.Halted || ev.ObservedRevision != stuck || ev.Class != ClassSource || ev.Reason != rec.Reason {
				t.Fatalf("evidence %+v", ev)
			}
			// The same delivery again is the decided one.
			if code, rep := f.flux(fluxBody(t, "payments", stuck, "ReconciliationSucceeded")); code != http.StatusOK || rep.Result != resultDuplicate {
				t.Fatalf("replay: %d %+v", code, rep)
			}
		})
	}
}

// TestStuckControllerNamesItsFailure (issue 41): a controller that stays on
// an earlier revision because it failed (kustomize-controller's dry-run
// denied by admission, lastAppliedRevision unchanged) is waited for with its
// message, and HALTED at the reconcileDeadline naming that message, not only
// the revision it is stuck on (before: "still observes", the message lost).
func TestStuckControllerNamesItsFailure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, policy, result, reason string
		code                         int
	}{
		{"deadline not passed", policyWithDeadline("2h"), resultWait,
			"waiting: Kustomization/flux-system/payments reports ReconciliationFailed: " + denied, http.StatusServiceUnavailable},
		{"deadline passed", policyWithDeadline("10m"), resultHalted,
			"reconcileDeadline 10m0s passed: Kustomization/flux-system/payments reports ReconciliationFailed: " + denied, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout", "payments")
			f.push(map[string]string{promotion.PolicyFile: c.policy})
			stuck := f.desired["checkout"] // an ancestor of payments' desired commit
			code, rep := f.flux(fluxFailure(t, "payments", stuck, "ReconciliationFailed", denied))
			if code != c.code || rep.Result != c.result || !strings.HasPrefix(rep.Reason, c.reason) {
				t.Fatalf("%d %+v\nwant %d %s %q", code, rep, c.code, c.result, c.reason)
			}
			if c.result != resultHalted {
				return
			}
			rec, err := promotion.Parse("x", []byte(f.show(promotion.RecordPath("payments", "production"))))
			must(t, err)
			if rec.State != promotion.Halted || rec.Reason != rep.Reason || !strings.Contains(rec.Reason, "still at "+stuck) {
				t.Fatalf("record %s %q", rec.State, rec.Reason)
			}
		})
	}
}

// TestResyncDecidesDeadline: with the resync on (serve's default), a
// delivery never HALTs at reconcileDeadline: notification-controller
// retries a 503 for a while, so a delivery can be an old event that names
// a revision (or a failure) the controller has left, and the record was
// once HALTED "still observes" a commit two commits behind (CI, issue 41).
// The delivery waits; the resync's reading of the controller object HALTs.
func TestResyncDecidesDeadline(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		body func(f *fixture) []byte
	}{
		{"stuck, no failure reported", func(f *fixture) []byte {
			return fluxBody(t, "payments", f.desired["checkout"], "ReconciliationSucceeded")
		}},
		{"stuck, failure reported", func(f *fixture) []byte {
			return fluxFailure(t, "payments", f.desired["checkout"], "ReconciliationFailed", denied)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout", "payments")
			f.push(map[string]string{promotion.PolicyFile: policyWithDeadline("10m")})
			f.handler.proc.ResyncDecidesDeadline = true
			tip := f.tip()
			code, rep := f.flux(c.body(f))
			if code != http.StatusServiceUnavailable || rep.Result != resultWait || !strings.Contains(rep.Reason, "the resync decides") {
				t.Fatalf("delivery past the deadline: %d %+v, want 503 wait leaving it to the resync", code, rep)
			}
			if f.tip() != tip {
				t.Fatal("a delivery past the deadline wrote to Git")
			}
			// The resync's own reading of the controller decides.
			ev, err := decodeFlux(c.body(f))
			must(t, err)
			ev.Controller = ResyncController
			if _, err := f.handler.proc.Process(context.Background(), ev); err != nil {
				t.Fatalf("the resync's event: %v", err)
			}
			rec, err := promotion.Parse("x", []byte(f.show(promotion.RecordPath("payments", "production"))))
			must(t, err)
			if rec.State != promotion.Halted || !strings.HasPrefix(rec.Reason, "reconcileDeadline 10m0s passed") {
				t.Fatalf("record %s %q, want HALTED at the deadline", rec.State, rec.Reason)
			}
		})
	}
}
