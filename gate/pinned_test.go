package gate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// pinnedDesired is the example staging record's reconciling.desiredRevision,
// the commit pinnedFixture's staging Applications name.
const pinnedDesired = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"

// pinnedFixture is the example with staging's binding pinned and its
// Applications naming pinnedDesired.
func pinnedFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, func(root string) {
		testenv.RemoveTrust(t, root)
		// staging's binding is the policy's first.
		policy := filepath.Join(root, "throughline-policy.yaml")
		data, err := os.ReadFile(policy)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(data), "      targetRevision: main\n", "      targetRevision: main\n      pinned: true\n", 1)
		if err := os.WriteFile(policy, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{"clusters/staging/checkout.yaml", "clusters/staging/storefront.yaml"} { // storefront: no record, any commit
			gittest.Replace(t, root, a, "targetRevision: main", "targetRevision: "+pinnedDesired)
		}
	})
}

// TestPinMovedWithItsRecord: a hostile pull request moves pinned staging's
// Application to a commit of its choosing AND edits staging's record so
// that its reconciling.desiredRevision names the same commit, in one
// change. The pin must be judged against the record as the base has it
// (promote reconcile writes both on the base branch, never a pull
// request): the every-PR check refuses it (controller-binding), and the
// promotion gate, which the record's change brings in, refuses the
// controller file and the record's rewrite.
func TestPinMovedWithItsRecord(t *testing.T) {
	t.Parallel()
	const moved = "7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b"
	const app, record = "clusters/staging/checkout.yaml", "promotion/checkout/staging.yaml"
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		// check and promote are the rules of throughline check's
		// repository report and of promote check.
		check, promote []string
	}{
		{"the pin and the record's desired revision moved together", func(f *fixture) {
			f.replace(app, "targetRevision: "+pinnedDesired, "targetRevision: "+moved)
			f.replace(record, "  desiredRevision: "+pinnedDesired, "  desiredRevision: "+moved)
		}, []string{RuleController}, []string{RuleFile, RuleRecordUpdate}},
		{"the record's desired revision moved alone", func(f *fixture) {
			f.replace(record, "  desiredRevision: "+pinnedDesired, "  desiredRevision: "+moved)
		}, nil, []string{RuleRecordUpdate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := pinnedFixture(t)
			f.branch("pr", func() { tc.change(f) })
			v, err := CheckChange(context.Background(), f.repo, Request{Base: "main", Head: "pr", Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if got := findingRules(v.Repository.Findings); !slices.Equal(got, tc.check) {
				t.Errorf("throughline check: rules %v, want %v: %q", got, tc.check, v.Repository.Refusals)
			}
			p, err := CheckPromotion(context.Background(), f.repo, Request{Base: "main", Head: "pr", Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			got := findingRules(p.Findings)
			for _, r := range tc.promote {
				if !slices.Contains(got, r) {
					t.Errorf("promote check: rules %v, want %s among them: %q", got, r, p.Refusals)
				}
			}
			if !slices.ContainsFunc(p.Findings, func(f Finding) bool {
				return f.Rule == RuleRecordUpdate && f.Field == "reconciling.desiredRevision" && f.Old == pinnedDesired && f.New == moved
			}) {
				t.Errorf("promote check: no %s finding on reconciling.desiredRevision %s -> %s: %+v", RuleRecordUpdate, pinnedDesired, moved, p.Findings)
			}
			if p.OK || v.OK {
				t.Errorf("passed: throughline check %v, promote check %v", v.OK, p.OK)
			}
		})
	}
}

// findingRules are the distinct rules of findings, sorted.
func findingRules(findings []Finding) []string {
	var out []string
	for _, f := range findings {
		out = append(out, f.Rule)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
