package promote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/sshkey"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// wantEnvRefusal fails unless err is an environment refusal (exit 3) of
// rule that names the registry: its File, or its cause's (a transition's
// refusal of the record wraps the registry's). Its wording: the tests'
// golden files.
func wantEnvRefusal(t *testing.T, err error, rule string) {
	t.Helper()
	re := refusedBy(t, err, rule)
	for r := &re; r != nil; {
		if r.File == promotion.PolicyFile {
			return
		}
		var cause *exitcode.Refusal
		if !errors.As(r.Err, &cause) {
			break
		}
		r = cause
	}
	t.Errorf("refusal %q does not name the registry %s", err, promotion.PolicyFile)
}

// TestProposeEnvironmentIdentity: the attacks of issue 14 item 1, each
// refused by the registry at the base; the registry gives the path and the
// cluster when they are not given.
func TestProposeEnvironmentIdentity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	record := errorLines(t, "testdata/propose-environment-identity.golden", 6)
	for _, tc := range []struct {
		name string
		req  ProposeRequest
		rule string
	}{
		{"an environment the registry does not know over production's path",
			ProposeRequest{From: "staging", To: "qa", Path: production}, environment.RuleUnknown},
		{"production's path under staging's name",
			ProposeRequest{From: "dev", To: "staging", Path: production}, environment.RuleMismatch},
		{"a source the registry does not know",
			ProposeRequest{From: "qa", To: "production"}, environment.RuleUnknown},
		{"free-text cluster",
			ProposeRequest{From: "staging", To: "production", Cluster: "staging-eu-1"}, environment.RuleMismatch},
		{"a path of no environment",
			ProposeRequest{From: "staging", To: "production", Path: "apps/checkout/base"}, environment.RuleMismatch},
		{"another app's path",
			ProposeRequest{From: "staging", To: "production", Path: "apps/payments/overlays/production"}, environment.RuleMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.App, tc.req.Renderer = "checkout", renderer
			_, err := Propose(context.Background(), f.repo, tc.req)
			wantEnvRefusal(t, err, tc.rule)
			record(tc.name, err)
		})
	}
	if out := f.git("branch", "--list", "throughline/*"); out != "" {
		t.Fatalf("a refused proposal left branches: %s", out)
	}
	p, err := Propose(context.Background(), f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Renderer: renderer})
	must(t, err)
	if p.Record.Target.Path != production || p.Record.Target.Cluster != "prod-eu-1" {
		t.Fatalf("the registry's path and cluster: %+v", p.Record.Target)
	}
}

// TestTransitionsEnvironmentIdentity: verify, approve and reconcile refuse
// a record whose target disagrees with the registry at the base (written
// by hand on the attempt branch), and a registry the branch edits does not
// judge it.
func TestTransitionsEnvironmentIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	record := errorLines(t, "testdata/transitions-environment-identity.golden", 8)
	for _, tc := range []struct {
		name   string
		edit   func(rec *promotion.Record)
		policy bool
		rule   string
	}{
		{"cluster", func(rec *promotion.Record) { rec.Target.Cluster = "staging-eu-1" }, false,
			environment.RuleMismatch},
		{"path", func(rec *promotion.Record) { rec.Target.Path = "apps/checkout/overlays/staging" }, false,
			environment.RuleMismatch},
		{"policy edited on the branch", func(rec *promotion.Record) { rec.Target.Cluster = "prod-eu-2" }, true,
			environment.RuleMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.unsignedApprovals() // signed approvals: approvals_test.go
			p := f.propose()
			f.amend(p.Branch, func() {
				rec := *p.Record
				tc.edit(&rec)
				data, err := rec.Marshal()
				must(t, err)
				f.write(map[string]string{promotion.RecordPath("checkout", "production"): string(data)})
				if tc.policy {
					f.write(map[string]string{promotion.PolicyFile: strings.Replace(f.read(promotion.PolicyFile), "prod-eu-1", "prod-eu-2", 1)})
				}
			})
			_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
			wantEnvRefusal(t, err, tc.rule)
			record(tc.name+", verify", err)
			_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(time.Hour), Now: now,
				Renderer: renderer})
			wantEnvRefusal(t, err, tc.rule)
			record(tc.name+", approve", err)
			f.git("merge", "-q", "--no-edit", p.Branch)
			if tc.policy {
				// Merged, the policy is the base's: reconcile is judged by it.
				return
			}
			_, _, err = Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
			wantEnvRefusal(t, err, tc.rule)
			record(tc.name+", reconcile", err)
		})
	}
}

// TestCheckEnvironmentIdentity: the PR gate refuses a record whose target
// disagrees with the registry at the base, even when the PR edits the
// policy to agree with it.
func TestCheckEnvironmentIdentity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    string
		edit   func(rec *promotion.Record)
		policy func(s string) string
		rule   string
		field  string
		text   string
	}{
		{"production's digest under a qa record", "qa", func(rec *promotion.Record) { rec.Target.Environment = "qa" }, nil,
			environment.RuleUnknown, "target.environment", `environment "qa" is not in the registry`},
		{"free-text cluster", "production", func(rec *promotion.Record) { rec.Target.Cluster = "staging-eu-1" }, nil,
			environment.RuleMismatch, "target.cluster", `cluster "staging-eu-1" is not environment production's`},
		{"the policy edited to agree", "production", func(rec *promotion.Record) { rec.Target.Cluster = "prod-eu-2" },
			func(s string) string { return strings.Replace(s, "prod-eu-1", "prod-eu-2", 1) },
			environment.RuleMismatch, "target.cluster", `cluster "prod-eu-2" is not environment production's`},
		{"a qa environment added by the PR", "qa", func(rec *promotion.Record) { rec.Target.Environment = "qa" },
			func(s string) string {
				return strings.Replace(s, "  production:\n    cluster: prod-eu-1", "  qa:\n    cluster: prod-eu-1", 1)
			},
			environment.RuleUnknown, "target.environment", `environment "qa" is not in the registry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			p := f.propose()
			f.amend(p.Branch, func() {
				target := p.Record.Target
				probe := promotion.Record{Target: target}
				tc.edit(&probe)
				rec, err := promotion.NewCandidate("checkout", 1, p.Record.Artifact, probe.Target, time.Now(), "test")
				must(t, err)
				data, err := rec.Marshal()
				must(t, err)
				f.git("rm", "-q", "gitops/"+promotion.RecordPath("checkout", "production"))
				f.write(map[string]string{promotion.RecordPath("checkout", tc.env): string(data)})
				if tc.policy != nil {
					f.write(map[string]string{promotion.PolicyFile: tc.policy(f.read(promotion.PolicyFile))})
				}
			})
			rep := f.check(p.Branch, time.Now())
			var found *gate.Finding
			for i, fd := range rep.Findings {
				if fd.Rule == tc.rule {
					found = &rep.Findings[i]
				}
			}
			if rep.OK || found == nil {
				t.Fatalf("no %s finding: %v %q", tc.rule, rules(rep), rep.Refusals)
			}
			if found.File != promotion.RecordPath("checkout", tc.env) || found.Field != tc.field ||
				!strings.Contains(found.Reason, tc.text) || !strings.Contains(found.Reason, promotion.PolicyFile) {
				t.Errorf("finding %+v, want file %s field %s saying %q", *found, promotion.RecordPath("checkout", tc.env), tc.field, tc.text)
			}
		})
	}
}

// TestRollbackEnvironmentIdentity: rollback resolves its environment
// against the registry at the base like propose.
func TestRollbackEnvironmentIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := newRollbackFixture(t)
	f.write(map[string]string{promotion.PolicyFile: "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n" +
		"  staging:\n    paths: [\"apps/*/overlays/staging\"]\n  production:\n    cluster: production\n    paths: [\"apps/*/overlays/production\"]\n" +
		sshkey.PolicyLine})
	f.commit("registry")
	exists := func(context.Context, string) (bool, error) { return true, nil }
	record := errorLines(t, "testdata/rollback-environment-identity.golden", 3)
	for _, tc := range []struct {
		name, env, path, cluster string
		rule                     string
	}{
		{"unknown environment", "qa", webOverlay, "", environment.RuleUnknown},
		{"production's path under staging's name", "staging", webOverlay, "", environment.RuleMismatch},
		{"free-text cluster", "production", "", "prod-us-1", environment.RuleMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rollback(ctx, f.repo, RollbackRequest{App: "web", Env: tc.env, To: ledger.Previous, Path: tc.path, Cluster: tc.cluster,
				Renderer: renderer, Exists: exists})
			wantEnvRefusal(t, err, tc.rule)
			record(tc.name, err)
		})
	}
	res, err := Rollback(ctx, f.repo, RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Renderer: renderer, Exists: exists})
	must(t, err)
	if res.Proposal.Record.Target.Path != webOverlay {
		t.Fatalf("the registry's path: %+v", res.Proposal.Record.Target)
	}
}
