package promote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// wantEnvRefusal fails unless err is an environment refusal (exit 3) of
// rule that names the registry and says every one of texts.
func wantEnvRefusal(t *testing.T, err error, rule string, texts ...string) {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || re.Rule != rule || exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("want refusal %s (exit 3), got exit %d: %v", rule, exitcode.Code(err), err)
	}
	for _, s := range append([]string{promotion.PolicyFile}, texts...) {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not say %q", err, s)
		}
	}
}

// TestProposeEnvironmentIdentity: the attacks of issue 14 item 1, each
// refused by the registry at the base; the registry gives the path and the
// cluster when they are not given.
func TestProposeEnvironmentIdentity(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name  string
		req   ProposeRequest
		rule  string
		texts []string
	}{
		{"an environment the registry does not know over production's path",
			ProposeRequest{From: "staging", To: "qa", Path: production}, environment.RuleUnknown, []string{`environment "qa"`}},
		{"production's path under staging's name",
			ProposeRequest{From: "dev", To: "staging", Path: production}, environment.RuleMismatch,
			[]string{"environment production's, not staging's"}},
		{"a source the registry does not know",
			ProposeRequest{From: "qa", To: "production"}, environment.RuleUnknown, []string{`environment "qa"`}},
		{"free-text cluster",
			ProposeRequest{From: "staging", To: "production", Cluster: "staging-eu-1"}, environment.RuleMismatch,
			[]string{`cluster "staging-eu-1" is not environment production's`}},
		{"a path of no environment",
			ProposeRequest{From: "staging", To: "production", Path: "apps/checkout/base"}, environment.RuleMismatch,
			[]string{"belongs to no environment"}},
		{"another app's path",
			ProposeRequest{From: "staging", To: "production", Path: "apps/payments/overlays/production"}, environment.RuleMismatch,
			[]string{"is app payments's, not checkout's"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.App, tc.req.Renderer = "checkout", renderer
			_, err := Propose(context.Background(), f.repo, tc.req)
			wantEnvRefusal(t, err, tc.rule, tc.texts...)
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
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct {
		name   string
		edit   func(rec *promotion.Record)
		policy bool
		rule   string
		text   string
	}{
		{"cluster", func(rec *promotion.Record) { rec.Target.Cluster = "staging-eu-1" }, false,
			environment.RuleMismatch, `cluster "staging-eu-1" is not environment production's`},
		{"path", func(rec *promotion.Record) { rec.Target.Path = "apps/checkout/overlays/staging" }, false,
			environment.RuleMismatch, "environment staging's, not production's"},
		{"policy edited on the branch", func(rec *promotion.Record) { rec.Target.Cluster = "prod-eu-2" }, true,
			environment.RuleMismatch, `cluster "prod-eu-2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			wantEnvRefusal(t, err, tc.rule, tc.text)
			_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(time.Hour), Now: now,
				Renderer: renderer})
			wantEnvRefusal(t, err, tc.rule, tc.text)
			f.git("merge", "-q", "--no-edit", p.Branch)
			if tc.policy {
				// Merged, the policy is the base's: reconcile is judged by it.
				return
			}
			_, _, err = Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
			wantEnvRefusal(t, err, tc.rule, tc.text)
		})
	}
}

// TestCheckEnvironmentIdentity: the PR gate refuses a record whose target
// disagrees with the registry at the base, even when the PR edits the
// policy to agree with it.
func TestCheckEnvironmentIdentity(t *testing.T) {
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
	ctx := context.Background()
	f, _ := newRollbackFixture(t)
	f.write(map[string]string{promotion.PolicyFile: "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n" +
		"  staging:\n    paths: [\"apps/*/overlays/staging\"]\n  production:\n    cluster: production\n    paths: [\"apps/*/overlays/production\"]\n"})
	f.commit("registry")
	exists := func(context.Context, string) (bool, error) { return true, nil }
	for _, tc := range []struct {
		name, env, path, cluster string
		rule, text               string
	}{
		{"unknown environment", "qa", webOverlay, "", environment.RuleUnknown, `environment "qa"`},
		{"production's path under staging's name", "staging", webOverlay, "", environment.RuleMismatch, "environment production's, not staging's"},
		{"free-text cluster", "production", "", "prod-us-1", environment.RuleMismatch, `cluster "prod-us-1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rollback(ctx, f.repo, RollbackRequest{App: "web", Env: tc.env, To: ledger.Previous, Path: tc.path, Cluster: tc.cluster,
				Renderer: renderer, Exists: exists})
			wantEnvRefusal(t, err, tc.rule, tc.text)
		})
	}
	res, err := Rollback(ctx, f.repo, RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Renderer: renderer, Exists: exists})
	must(t, err)
	if res.Proposal.Record.Target.Path != webOverlay {
		t.Fatalf("the registry's path: %+v", res.Proposal.Record.Target)
	}
}
