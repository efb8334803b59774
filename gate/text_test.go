package gate

import (
	"bytes"
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// TestWriteText: the words of the gate's reports, tested once, in a golden
// file (testdata/text.golden; THROUGHLINE_UPDATE_GOLDEN=1 rewrites it).
func TestWriteText(t *testing.T) {
	t.Parallel()
	const base, head = "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"
	dep := render.ID{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "checkout"}
	repo := &RepositoryReport{Base: base, Head: head, Files: []string{"apps/checkout/overlays/production/kustomization.yaml"},
		Registry: "throughline-policy.yaml",
		Environments: []EnvironmentDiff{{Name: "production", Cluster: "prod-eu-1", Protected: true, Overlays: []OverlayDiff{
			{App: "checkout", Path: "apps/checkout/overlays/production", Promotion: true, Checks: "changed",
				Changes: []promotion.Change{{Class: promotion.ClassCapacity, Object: dep, Field: "spec.replicas", Before: "3", After: "1", Op: "changed"}}},
			{App: "cart", Path: "apps/cart/overlays/production"}}}},
		Promotion: &PromotionRecord{App: "checkout", Environment: "production", Record: "promotion/checkout/production.yaml"},
		Judges: []JudgesDiff{{Environment: "production", Protected: true, Change: "sha256:cafe", Required: 2, Approved: 1,
			Changes: []Finding{{Rule: RuleJudges, Reason: "approvers of production: [alice bob] -> [alice]"}}}},
		Preexisting: []Finding{{Rule: RuleController, Reason: "an old refusal"}},
		Findings:    []Finding{{Rule: RuleApprovalCount, Reason: "1 of 2 signed approvals"}},
	}
	prom := &PromotionReport{PromotionID: "checkout-production-1", App: "checkout", Digest: "sha256:aaaa", Environment: "production",
		State: promotion.Approved, Files: []string{"promotion/checkout/production.yaml"},
		Changes: []promotion.Change{{Class: promotion.ClassArtifact, Object: dep, Field: "spec.template.spec.containers[0].image",
			Before: "r/checkout@sha256:bbbb", After: "r/checkout@sha256:aaaa", Op: "changed"}},
		Refusals: []string{"rendered-hash: the branch renders another hash"}}
	ok := &PromotionReport{PromotionID: "checkout-staging-2", App: "checkout", Digest: "sha256:bbbb", Environment: "staging",
		State: promotion.Approved, OK: true}
	two := &PromotionReport{Files: []string{"promotion/checkout/production.yaml", "promotion/checkout/staging.yaml"},
		Refusals: []string{"a promotion change carries exactly one promotion record, this one changes 2 " +
			"(promotion/checkout/production.yaml, promotion/checkout/staging.yaml)"},
		Findings: []Finding{{Rule: RuleRecordCount}}}
	var buf bytes.Buffer
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"verdict refused", func() error { return (&Verdict{Repository: repo, Promotion: prom}).WriteText(&buf) }},
		{"promotion refused", func() error { return prom.WriteText(&buf) }},
		{"promotion ok", func() error { return ok.WriteText(&buf) }},
		// Two records changed: no one record, so no "promotion :   ->  (state )".
		{"two records changed", func() error { return two.WriteText(&buf) }},
		{"no registry, ok", func() error {
			return (&Verdict{Repository: &RepositoryReport{Base: base, Head: head}, OK: true}).WriteText(&buf)
		}},
	} {
		buf.WriteString("== " + tc.name + "\n")
		if err := tc.write(); err != nil {
			t.Fatal(err)
		}
	}
	golden.Compare(t, "testdata/text.golden", buf.Bytes())

	// A failing writer: the first error is returned, nothing after it.
	if err := (&Verdict{Repository: repo, Promotion: prom}).WriteText(failingWriter{}); !errors.Is(err, errWrite) {
		t.Fatalf("WriteText on a failing writer = %v, want %v", err, errWrite)
	}
}

var errWrite = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }
