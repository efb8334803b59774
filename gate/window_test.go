package gate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/window"
)

// TestCheckClosedEnvironment: the every-PR check refuses a change of an
// environment's render while the policy at the base closes it (a freeze,
// outside its windows), naming the overlay, the rule and the next
// opening; the same change passes once open, and a change elsewhere
// passes while it is closed. The PR's own policy does not count.
func TestCheckClosedEnvironment(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	freeze := fmt.Sprintf("    freezes:\n      - {name: launch, from: %q, until: %q}\n", now.Add(-time.Hour).Format(time.RFC3339),
		now.Add(time.Hour).Format(time.RFC3339))
	f := newFixtureWith(t, func(root string) {})
	f.replace(promotion.PolicyFile, "  staging:\n", "  staging:\n"+freeze)
	f.commit("staging frozen for the launch")
	k := staging + "/kustomization.yaml"
	f.branch("more-replicas", func() {
		f.write(map[string]string{k: strings.Replace(f.read(k), "count: 2", "count: 3", 1)})
		f.replace(promotion.PolicyFile, freeze, "") // the PR's own copy, unfrozen: not read
	})
	rep := f.checkWith(Request{Base: "main", Head: "more-replicas", Now: now})
	found := false
	for _, fd := range rep.Findings {
		found = found || fd.Rule == window.RuleFrozen && fd.Environment == "staging" && fd.Field == "environments.staging.freezes[0]" &&
			strings.HasPrefix(fd.Reason, staging+" changes while it is closed: staging does not accept promotions at ") &&
			strings.Contains(fd.Reason, "it opens next at "+now.Add(time.Hour).Format(time.RFC3339))
	}
	if !found {
		t.Fatalf("no frozen finding for staging: %+v", rep.Findings)
	}
	later := f.checkWith(Request{Base: "main", Head: "more-replicas", Now: now.Add(2 * time.Hour)})
	for _, fd := range later.Findings {
		if fd.Rule == window.RuleFrozen {
			t.Fatalf("still frozen after the freeze: %+v", fd)
		}
	}
	f.branch("production-note", func() {
		f.write(map[string]string{"docs/notes.md": "a note\n"})
	})
	for _, fd := range f.checkWith(Request{Base: "main", Head: "production-note", Now: now}).Findings {
		if fd.Rule == window.RuleFrozen {
			t.Fatalf("a change outside staging refused: %+v", fd)
		}
	}
}
