package environment

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
)

const file = "throughline-policy.yaml"

// example is the registry of examples/gitops-env.
func example() *v1alpha1.PromotionPolicy {
	return &v1alpha1.PromotionPolicy{Environments: map[string]v1alpha1.EnvironmentPolicy{
		"dev":     {Cluster: "dev-eu-1", Paths: []string{"apps/*/overlays/dev"}},
		"staging": {Cluster: "staging-eu-1", Paths: []string{"apps/*/overlays/staging"}, Namespaces: []string{"*-staging"}},
		"production": {Cluster: "prod-eu-1", Paths: []string{"apps/*/overlays/production"}, Namespaces: []string{"*-production"},
			Apps: map[string]string{"legacy": "legacy/prod"}, Protected: true, Approvers: []string{"alice@example.com", "bob@example.com"},
			MinApprovals: 2, Controllers: []string{"clusters/production/*.yaml"}},
	}}
}

func TestNewRefusesInvalidRegistries(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	tests := []struct {
		name  string
		edit  func(p *v1alpha1.PromotionPolicy)
		field string
	}{
		{"path in two environments", func(p *v1alpha1.PromotionPolicy) {
			e := p.Environments["staging"]
			e.Paths = append(e.Paths, "apps/*/overlays/production")
			p.Environments["staging"] = e
		}, "environments.staging.paths[1]"},
		{"explicit path inside another environment's pattern", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["dev"] = v1alpha1.EnvironmentPolicy{Apps: map[string]string{"checkout": "apps/checkout/overlays/production"}}
		}, "environments.production.paths[0]"},
		{"overlapping patterns", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Paths: []string{"apps/checkout/*/production"}}
		}, "environments.qa.paths[0]"},
		{"two wildcards", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Paths: []string{"*/*/qa"}}
		}, "environments.qa.paths[0]"},
		{"no wildcard", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Paths: []string{"apps/checkout/qa"}}
		}, "environments.qa.paths[0]"},
		{"partial pattern", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Paths: []string{"apps/*/overlays/qa-*"}}
		}, "environments.qa.paths[0]"},
		{"path leaves the repository", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Paths: []string{"../*/qa"}}
		}, "environments.qa.paths[0]"},
		{"absolute path", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Apps: map[string]string{"checkout": "/etc/qa"}}
		}, "environments.qa.apps.checkout"},
		{"bad environment name", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["QA/../prod"] = v1alpha1.EnvironmentPolicy{}
		}, `environments.QA/../prod`},
		{"bad namespace pattern", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Namespaces: []string{"qa-["}}
		}, "environments.qa.namespaces[0]"},
		{"approver twice", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Approvers: []string{"a@x", "a@x"}}
		}, "environments.qa.approvers[1]"},
		{"more approvals than approvers", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Approvers: []string{"a@x"}, MinApprovals: 2}
		}, "environments.qa.minApprovals"},
		{"negative deadline", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{ReconcileDeadline: d(-time.Minute)}
		}, "environments.qa.reconcileDeadline"},
		{"zero rollout deadline", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{RolloutDeadline: d(0)}
		}, "environments.qa.rolloutDeadline"},
		{"binding server not https", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Binding: &v1alpha1.ControllerBinding{Server: "http://10.0.0.1"}}
		}, "environments.qa.binding.server"},
		{"binding Flux source of no kind", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Binding: &v1alpha1.ControllerBinding{
				FluxSource: &v1alpha1.FluxSourceRef{Kind: "HelmRelease", Name: "x"}}}
		}, "environments.qa.binding.fluxSource.kind"},
		{"binding empty repository URL", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Binding: &v1alpha1.ControllerBinding{RepoURLs: []string{" "}}}
		}, "environments.qa.binding.repoURLs[0]"},
		{"binding pinned to no branch", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Binding: &v1alpha1.ControllerBinding{Pinned: true}}
		}, "environments.qa.binding.pinned"},
		{"binding pinned with an OCI source", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Binding: &v1alpha1.ControllerBinding{Pinned: true, TargetRevision: "main"},
				Source: &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "registry.example/gitops", Tag: "qa"}}}
		}, "environments.qa.binding.pinned"},
		{"window of no schedule", func(p *v1alpha1.PromotionPolicy) {
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Windows: []v1alpha1.PromotionWindow{{Duration: *d(time.Hour)}}}
		}, "environments.qa.windows[0].schedule"},
		{"freeze that ends before it starts", func(p *v1alpha1.PromotionPolicy) {
			from := metav1.NewTime(time.Date(2026, 12, 21, 0, 0, 0, 0, time.UTC))
			p.Environments["qa"] = v1alpha1.EnvironmentPolicy{Freezes: []v1alpha1.Freeze{{Name: "x", From: from, Until: metav1.NewTime(from.Add(-time.Hour))}}}
		}, "environments.qa.freezes[0]"},
		{"zero evidence age", func(p *v1alpha1.PromotionPolicy) { p.EvidenceMaxAge = d(0) }, "evidenceMaxAge"},
		{"allowed signers outside", func(p *v1alpha1.PromotionPolicy) { p.AllowedSigners = "../keys" }, "allowedSigners"},
		{"evidence signers outside", func(p *v1alpha1.PromotionPolicy) { p.EvidenceSigners = "/etc/keys" }, "evidenceSigners"},
		{"negative evidence age of an environment", func(p *v1alpha1.PromotionPolicy) {
			e := p.Environments["staging"]
			e.EvidenceMaxAge = d(-time.Hour)
			p.Environments["staging"] = e
		}, "environments.staging.evidenceMaxAge"},
	}
	// Each error's field ([...]) in its message: testdata/invalid-registries.golden.
	msgs := golden.ErrorLines(t, "testdata/invalid-registries.golden", len(tests))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := example()
			tt.edit(p)
			_, err := New(file, p)
			if err == nil {
				t.Fatal("accepted")
			}
			wantInvalid(t, err)
			msgs(tt.name+" ["+tt.field+"]", err)
		})
	}
}

// TestPolicyDocumentDuplicateEnvironment pins that YAML decoding (which
// New's callers use) refuses an environment listed twice, naming it.
func TestPolicyDocumentDuplicateEnvironment(t *testing.T) {
	t.Parallel()
	doc := "environments:\n  staging:\n    cluster: a\n  staging:\n    cluster: b\n"
	_, err := sigyaml.YAMLToJSONStrict([]byte(doc))
	if err == nil || !strings.Contains(err.Error(), "staging") {
		t.Fatalf("duplicate environment: %v", err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	r, err := New(file, example())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		claim Claim
		want  Resolved
		rule  string
		text  string
	}{
		{"path gives the environment", Claim{App: "checkout", Path: "./apps/checkout/overlays/production"},
			Resolved{App: "checkout", Environment: "production", Path: "apps/checkout/overlays/production", Cluster: "prod-eu-1"}, "", ""},
		{"environment gives the path", Claim{App: "checkout", Environment: "staging"},
			Resolved{App: "checkout", Environment: "staging", Path: "apps/checkout/overlays/staging", Cluster: "staging-eu-1"}, "", ""},
		{"the path gives the app", Claim{Path: "apps/checkout/overlays/staging"},
			Resolved{App: "checkout", Environment: "staging", Path: "apps/checkout/overlays/staging", Cluster: "staging-eu-1"}, "", ""},
		{"explicit app path", Claim{App: "legacy", Environment: "production", Path: "legacy/prod"},
			Resolved{App: "legacy", Environment: "production", Path: "legacy/prod", Cluster: "prod-eu-1"}, "", ""},
		{"unknown environment", Claim{App: "checkout", Environment: "qa", Path: "apps/checkout/overlays/production"},
			Resolved{}, RuleUnknown, `environment "qa" is not in the registry`},
		{"production path under a staging name", Claim{App: "checkout", Environment: "staging", Path: "apps/checkout/overlays/production"},
			Resolved{}, RuleMismatch, "path apps/checkout/overlays/production is environment production's, not staging's"},
		{"another app's path", Claim{App: "payments", Environment: "production", Path: "apps/checkout/overlays/production"},
			Resolved{}, RuleMismatch, "is app checkout's, not payments's"},
		{"path of no environment", Claim{App: "checkout", Path: "apps/checkout/overlays/qa"},
			Resolved{}, RuleMismatch, "belongs to no environment"},
		{"traversal is cleaned, then judged", Claim{App: "checkout", Environment: "staging", Path: "apps/checkout/overlays/staging/../production"},
			Resolved{}, RuleMismatch, "is environment production's"},
		{"free-text cluster", Claim{App: "checkout", Environment: "production", Cluster: "staging-eu-1"},
			Resolved{}, RuleMismatch, `cluster "staging-eu-1" is not environment production's`},
		{"staging namespace in production", Claim{App: "checkout", Path: "apps/checkout/overlays/production", Namespace: "checkout-staging"},
			Resolved{}, RuleMismatch, `namespace "checkout-staging"`},
		{"nothing given", Claim{App: "checkout"}, Resolved{}, RuleMismatch, "neither an environment nor an overlay path"},
	}
	// What each refusal says ([...]): testdata/resolve.golden.
	msgs := golden.ErrorLines(t, "testdata/resolve.golden", 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(tt.claim)
			if tt.rule == "" {
				if err != nil {
					t.Fatal(err)
				}
				got.Env = nil
				if *got != tt.want {
					t.Errorf("got %+v, want %+v", *got, tt.want)
				}
				return
			}
			var ref *exitcode.Refusal
			if !errors.As(err, &ref) || ref.Rule != tt.rule || exitcode.Code(err) != exitcode.Refused {
				t.Fatalf("want refusal %s, got %v", tt.rule, err)
			}
			if re := wantRefusal(t, err); re.Rule == "" {
				t.Errorf("a refusal without a rule: %v", err)
			}
			msgs(tt.name+" ["+tt.text+"]", err)
		})
	}
}

func TestEmptyRegistryPassesClaims(t *testing.T) {
	t.Parallel()
	r, err := New(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Resolve(Claim{App: "a", Environment: "qa", Path: "x/y"})
	if err != nil || got.Cluster != "qa" || got.Path != "x/y" || r.Configured() {
		t.Fatalf("empty registry: %+v %v", got, err)
	}
}

func TestEnvironmentQuestions(t *testing.T) {
	t.Parallel()
	r, err := New(file, example())
	if err != nil {
		t.Fatal(err)
	}
	prod, _ := r.Get("production")
	staging, _ := r.Get("staging")
	if !prod.OwnsController("./clusters/production/checkout.yaml") || prod.OwnsController("clusters/staging/checkout.yaml") {
		t.Error("OwnsController")
	}
	if prod.RequiredApprovals() != 2 || staging.RequiredApprovals() != 0 || !prod.IsApprover("bob@example.com") || prod.IsApprover("mallory") {
		t.Error("approvals")
	}
	if app, env, _, ok := r.Locate("apps/checkout/overlays/.."); ok {
		t.Errorf("Locate of a parent path: %s/%s", app, env)
	}
	if got := r.Names(); strings.Join(got, ",") != "dev,production,staging" {
		t.Errorf("Names %v", got)
	}
}

// TestSameRepoURL: a controller's repository URL names the registry's
// repository whatever the host's case, a trailing "/" or ".git"; another
// owner, host or path is another repository.
func TestSameRepoURL(t *testing.T) {
	t.Parallel()
	const want = "https://git.example.test/platform/gitops-env.git"
	for _, tc := range []struct {
		url  string
		same bool
	}{
		{want, true},
		{"https://git.example.test/platform/gitops-env", true},
		{"https://GIT.example.test/platform/gitops-env/", true},
		{"https://git.example.test/attacker/gitops-env.git", false},
		{"https://git.example.test.evil/platform/gitops-env.git", false},
		{"https://git.example.test/platform/gitops-env-fork.git", false},
	} {
		if got := SameRepoURL(tc.url, want); got != tc.same {
			t.Errorf("SameRepoURL(%q) = %v, want %v", tc.url, got, tc.same)
		}
	}
}
