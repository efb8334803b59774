package promote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/window"
)

// closeProduction sets production's windows and freezes in the policy of
// the work tree (fields as they are written in throughline-policy.yaml; a
// policy without production gains it, at apps/*/overlays/production); the
// caller commits it.
func (f *fixture) closeProduction(fields map[string]any) {
	const env = "production"
	f.t.Helper()
	var pol map[string]any
	must(f.t, sigyaml.Unmarshal([]byte(f.read(promotion.PolicyFile)), &pol))
	envs, _ := pol["environments"].(map[string]any)
	if envs == nil {
		envs = map[string]any{}
		pol["environments"] = envs
	}
	e, _ := envs[env].(map[string]any)
	if e == nil {
		e = map[string]any{"cluster": env, "paths": []any{"apps/*/overlays/" + env}}
		envs[env] = e
	}
	for k, v := range fields {
		e[k] = v
	}
	data, err := sigyaml.Marshal(pol)
	must(f.t, err)
	f.write(map[string]string{promotion.PolicyFile: string(data)})
}

// freezeAround is a freeze from an hour before now to an hour after.
func freezeAround(now time.Time) map[string]any {
	return map[string]any{"freezes": []any{map[string]any{"name": "year-end", "from": now.Add(-time.Hour).UTC().Format(time.RFC3339),
		"until": now.Add(time.Hour).UTC().Format(time.RFC3339), "reason": "the shops' busiest weeks"}}}
}

// windowLater is one daily window of an hour that opens twelve hours
// after now (so it is closed now).
func windowLater(now time.Time) (map[string]any, time.Time) {
	open := now.Add(12 * time.Hour).UTC().Truncate(time.Minute)
	return map[string]any{"windows": []any{map[string]any{"schedule": fmt.Sprintf("%d %d * * *", open.Minute(), open.Hour()), "duration": "1h"}}}, open
}

// wantClosed fails unless err is the refusal of rule naming the next
// opening next.
func wantClosed(t *testing.T, err error, rule string, next time.Time) {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused || re.Rule != rule || re.File != promotion.PolicyFile ||
		!strings.Contains(re.Reason, "it opens next at "+next.UTC().Format(time.RFC3339)) {
		t.Fatalf("error %v (%#v), want refusal %s opening at %s", err, re, rule, next.UTC().Format(time.RFC3339))
	}
}

// TestProposeRefusedWhenClosed: production outside its window, or in a
// freeze, takes no new attempt: propose is refused (exit 3) naming the rule,
// the policy field and the next opening. Nothing is pushed.
func TestProposeRefusedWhenClosed(t *testing.T) {
	t.Parallel()
	now := time.Now()
	later, open := windowLater(now)
	for _, tc := range []struct {
		name   string
		fields map[string]any
		rule   string
		next   time.Time
	}{
		{"in a freeze", freezeAround(now), window.RuleFrozen, now.Add(time.Hour).Truncate(time.Second)},
		{"outside its window", later, window.RuleOutsideWindow, open},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.closeProduction(tc.fields)
			f.commit("production closed")
			branches := f.git("branch", "--list", "throughline/*")
			_, err := Propose(context.Background(), f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production,
				Renderer: renderer, Now: now})
			wantClosed(t, err, tc.rule, tc.next)
			if after := f.git("branch", "--list", "throughline/*"); after != branches {
				t.Fatalf("a refused proposal left branches: %q", after)
			}
		})
	}
}

// TestCheckRefusedWhenClosed: an attempt approved while production was
// open is refused by the PR gate once main freezes production; the PR's
// own copy of the policy (the freeze removed) does not count: the gate
// reads the policy at the base.
func TestCheckRefusedWhenClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.unsignedApprovals()
	now := time.Now()
	p := f.approved(now)
	if rep := f.check(p.Branch, now); len(rep.Refusals) != 0 {
		t.Fatalf("premise: the approved attempt passes while open: %q", rep.Refusals)
	}
	f.closeProduction(freezeAround(now))
	f.commit("production frozen for the year end")
	// The PR edits the freeze away on its branch.
	f.git("checkout", "-q", p.Branch)
	f.closeProduction(map[string]any{"freezes": nil})
	f.commit("unfreeze production")
	f.git("checkout", "-q", "main")
	rep := f.check(p.Branch, now)
	found := false
	for _, fd := range rep.Findings {
		found = found || fd.Rule == window.RuleFrozen && fd.Environment == "production" && fd.File == promotion.PolicyFile &&
			fd.Field == "environments.production.freezes[0]" && strings.Contains(fd.Reason, `freeze "year-end"`)
	}
	if !found {
		t.Fatalf("no frozen finding: %v %q", rules(rep), rep.Refusals)
	}
	// An hour later the freeze is over: only the branch's policy edit is left to judge.
	rep = f.check(p.Branch, now.Add(2*time.Hour))
	for _, fd := range rep.Findings {
		if fd.Rule == window.RuleFrozen || fd.Rule == window.RuleOutsideWindow {
			t.Fatalf("still closed after the freeze: %+v", fd)
		}
	}
}

// TestReconcileHaltsWhenClosed: a promotion approved inside the window and
// merged outside it is recorded HALTED with the reason at reconcile, and
// reconcile is refused (exit 3).
func TestReconcileHaltsWhenClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.unsignedApprovals()
	now := time.Now()
	p := f.approved(now)
	later, open := windowLater(now)
	f.closeProduction(later)
	f.commit("production: promotions only in the maintenance window")
	f.git("merge", "-q", "--no-ff", "-m", "merge "+p.Branch, p.Branch)
	_, _, err := Reconcile(context.Background(), f.repo, ReconcileRequest{App: "checkout", To: "production", By: "ci", Now: now, Renderer: renderer})
	wantClosed(t, err, window.RuleOutsideWindow, open)
	rec, err := promotion.ReadRecord(context.Background(), f.repo, "main", "checkout", "production")
	must(t, err)
	if rec.State != promotion.Halted || !strings.Contains(rec.Reason, "while production is closed (outside-window)") {
		t.Fatalf("record %s %s %q, want HALTED naming the window", rec.PromotionID, rec.State, rec.Reason)
	}
}

// TestRollbackInFreeze: a rollback is held by a freeze like any promotion,
// unless the environment says rollbackInFreeze: allow.
func TestRollbackInFreeze(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name  string
		allow bool
	}{{"held", false}, {"allowed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, _ := newRollbackFixture(t)
			fields := freezeAround(now)
			if tc.allow {
				fields["rollbackInFreeze"] = "allow"
			}
			f.closeProduction(fields)
			f.commit("production frozen")
			_, err := Rollback(context.Background(), f.repo, RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay,
				Renderer: renderer, Now: now, Exists: func(context.Context, string) (bool, error) { return true, nil }})
			if tc.allow {
				must(t, err)
				return
			}
			wantClosed(t, err, window.RuleFrozen, now.Add(time.Hour).Truncate(time.Second))
		})
	}
}

// TestCheckRollbackAllowedInFreeze: the PR gate lets a rollback through a
// freeze where rollbackInFreeze is allow (it is judged as a rollback by
// its prior acceptance; TestCheckRefusedWhenClosed holds a plain one).
func TestCheckRollbackAllowedInFreeze(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f, _ := newRollbackFixture(t)
	fields := freezeAround(now)
	fields["rollbackInFreeze"] = "allow"
	f.closeProduction(fields)
	f.commit("production frozen, rollbacks allowed")
	res, err := Rollback(context.Background(), f.repo, RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay,
		Renderer: renderer, Now: now, Exists: func(context.Context, string) (bool, error) { return true, nil }})
	must(t, err)
	if rep := f.check(res.Proposal.Branch, now); strings.Join(rules(rep), " ") != gate.RuleNotApproved {
		t.Fatalf("check of the rollback in the freeze: %v %q", rules(rep), rep.Refusals)
	}
}
