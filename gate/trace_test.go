package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/spantest"
)

// TestCheckTrace: the every-PR check of a change is one span tree:
// gate.repository, then a gate.step per step in the order they run, each
// naming the rules of the findings it added, and the root the verdict
// (not ok, the findings' rules); the production replica change is
// refused by the step that compares the renders (differences).
func TestCheckTrace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.branch("pr", func() {
		k := production + "/kustomization.yaml"
		f.write(map[string]string{k: strings.Replace(f.read(k), "count: 6", "count: 8", 1)})
	})
	ctx, trace := spantest.Root(t)
	rep, err := CheckRepository(ctx, f.repo, Request{Base: "main", Head: "pr"})
	if err != nil {
		t.Fatal(err)
	}
	var root string
	var steps []string
	stepRules := map[string]string{}
	for _, s := range spantest.Of(trace) {
		a := spantest.Attributes(s)
		switch s.Name() {
		case "gate.repository":
			root = s.SpanContext().SpanID().String()
			if a["throughline.ok"] != "false" || a["throughline.rules"] != "["+`"`+RuleProtected+`"`+"]" {
				t.Errorf("gate.repository: %v", a)
			}
		case "gate.step":
			steps = append(steps, a["throughline.step"])
			stepRules[a["throughline.step"]] = a["throughline.rules"]
		}
	}
	if want := []string{"render-base", "render-head", "differences", "trusted", "structure", "judges"}; !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	for _, s := range spantest.Of(trace) {
		if s.Name() == "gate.step" && s.Parent().SpanID().String() != root {
			t.Errorf("step %s is not a child of gate.repository", spantest.Attributes(s)["throughline.step"])
		}
	}
	refusing := ""
	for step, rules := range stepRules {
		if strings.Contains(rules, RuleProtected) {
			refusing += step
		}
	}
	if len(rep.Findings) == 0 || refusing != "differences" {
		t.Errorf("the protected-change finding comes from step %q (rules by step %v), findings %v", refusing, stepRules, rules(rep))
	}
}
