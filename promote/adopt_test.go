package promote

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// acceptProduction has the notifier's Git sink record production's
// RECONCILING record ACCEPTED at desired with one Pod running digest, as
// serve's live verification does.
func (f *fixture) acceptProduction(desired, digest string) {
	t := f.t
	at := time.Now()
	_, err := f.sink().Write(context.Background(), "checkout", "production", desired,
		func(_ context.Context, rec *promotion.Record, _ string) (*evidence.Record, error) {
			checks, soakStarted := f.passedChecks(production, at)
			return &evidence.Record{Decision: promotion.Accepted, ObservedRevision: desired, RenderedHash: rec.Target.RenderedHash,
				Acceptance: "checkout-production/checkout", Time: at, Checks: checks, SoakStartedAt: soakStarted, VerifiedAt: &at,
				Pods: []evidence.Pod{{Workload: "Deployment/checkout-production/checkout", Container: "checkout", Pod: "checkout-5c1-x1", Pods: 6,
					Declared: digest, ImageID: "ghcr.io/throughline-dev/checkout@" + digest, Outcome: "Verified", Match: "Exact"}},
				ReportedBy: evidence.Reporter{Source: "argocd", Object: "Application/argocd/checkout-production"}}, nil
		})
	must(t, err)
	f.git("reset", "-q", "--hard")
}

// TestAdoptionIsARollbackTarget: without adoption, rollback right after
// production's first promotion has no target (exit 3). Adopt records what
// production runs at installation as a RECONCILING baseline at the base's
// tip (the overlay unchanged); once serve's live verification accepts it,
// rollback --to previous goes back to it.
func TestAdoptionIsARollbackTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, adopt := range []bool{false, true} {
		f := newFixture(t)
		f.unsignedApprovals()
		now := time.Now()
		if adopt {
			a, err := Adopt(ctx, f.repo, AdoptRequest{App: "checkout", Env: "production", By: "alice", Renderer: renderer, Now: now})
			must(t, err)
			v := a.Record.VerifiedIn
			if a.Record.State != promotion.Reconciling || a.Record.Artifact.Digest != oldDigest || v == nil || v.Kind != promotion.KindAdoption ||
				a.Record.Reconciling.DesiredRevision != a.Revision || a.Branch != "main" {
				t.Fatalf("adoption %+v", a)
			}
			if _, err := Adopt(ctx, f.repo, AdoptRequest{App: "checkout", Env: "production", By: "alice", Renderer: renderer, Now: now}); exitcode.Code(err) != exitcode.Refused {
				t.Fatalf("adopting again: %v, want a refusal (the environment has a record)", err)
			}
			f.acceptProduction(a.Revision, oldDigest)
		}
		p := f.approved(now)
		f.git("merge", "-q", "--no-edit", p.Branch)
		_, rev, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
		must(t, err)
		f.acceptProduction(rev, newDigest)
		res, err := Rollback(ctx, f.repo, RollbackRequest{App: "checkout", Env: "production", To: ledger.Previous, Renderer: renderer,
			Exists: func(context.Context, string) (bool, error) { return true, nil }})
		var re *exitcode.Refusal
		if !adopt {
			if !errors.As(err, &re) || re.Rule != RuleRollbackTarget {
				t.Fatalf("rollback without adoption: %v, want %s", err, RuleRollbackTarget)
			}
			continue
		}
		must(t, err)
		if res.To.Artifact.Digest != oldDigest || res.Proposal.Record.VerifiedIn.PriorAcceptance.PromotionID != "checkout-production-9c2f1e0d7b6a-1" {
			t.Fatalf("rollback to %s (%+v), want the adopted %s", res.To.Artifact.Digest, res.Proposal.Record.VerifiedIn, oldDigest)
		}
		_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(time.Hour), Now: now,
			Renderer: renderer})
		must(t, err)
		if rep := f.check(res.Proposal.Branch, now); !rep.OK {
			t.Fatalf("check of the rollback to the adopted baseline: %v %q", rules(rep), rep.Refusals)
		}
	}
}

// TestForgedAdoptionRefused: adopt commits a baseline only for what the
// base branch already runs; a pull request cannot use it as a promotion.
// A hostile PR changes production's digest and adds, as production's first
// record, an adoption of the new digest "approved" by a free-text name
// (no signed approval, no evidence): the PR gate refuses it.
func TestForgedAdoptionRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.git("checkout", "-q", "-b", "forged")
	k := production + "/kustomization.yaml"
	f.write(map[string]string{k: strings.Replace(f.read(k), "1.4.2@"+oldDigest, "1.5.0@"+newDigest, 1)})
	forged := f.commit("production runs 1.5.0")
	rec, err := adoptedRecord(ctx, f.repo, forged, ProposeRequest{Path: production, Cluster: "prod-eu-1"},
		AdoptRequest{App: "checkout", Env: "production", By: "mallory", Renderer: renderer, Now: time.Now()})
	must(t, err)
	if rec.Artifact.Digest != newDigest {
		t.Fatalf("premise: the forged adoption names %s", rec.Artifact.Digest)
	}
	data, err := rec.Marshal()
	must(t, err)
	f.write(map[string]string{promotion.RecordPath("checkout", "production"): string(data)})
	f.commit("adopt production at 1.5.0")
	f.git("checkout", "-q", "main")
	rep := f.check("forged", time.Now())
	if got := rules(rep); rep.OK || !slices.Contains(got, gate.RuleApprovalCount) || !slices.Contains(got, gate.RuleEvidence) {
		t.Fatalf("a forged adoption: rules %v, want %s (no signed approval) and %s (no evidence): %q", got, gate.RuleApprovalCount, gate.RuleEvidence, rep.Refusals)
	}
}
