package promote

import (
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/promotion"
)

// TestCheckAfterMainMoved: the PR gate judges what the attempt branch adds
// since it was cut (three-dot semantics): an unrelated commit on main
// (another app's values) is not part of the promotion. A change of the
// target itself on main still voids the approval (the target moved on).
func TestCheckAfterMainMoved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		moved func(f *fixture)
		rules []string
	}{
		{"another app's values", func(f *fixture) {
			v := "apps/storefront/overlays/staging/values-staging.yaml"
			f.write(map[string]string{v: f.read(v) + "# the storefront team's note\n"})
		}, nil},
		{"a note in staging's overlay", func(f *fixture) {
			f.write(map[string]string{"apps/checkout/overlays/staging/notes.txt": "staging notes\n"})
		}, nil},
		{"the target itself", func(f *fixture) {
			k := production + "/kustomization.yaml"
			f.write(map[string]string{k: strings.Replace(f.read(k), "count: 6", "count: 8", 1)})
		}, []string{gate.RuleApprovalVoid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.unsignedApprovals()
			now := time.Now()
			p := f.approved(now)
			tc.moved(f)
			f.commit("main moves after the branch was cut")
			rep := f.check(p.Branch, now)
			if strings.Join(rules(rep), " ") != strings.Join(tc.rules, " ") {
				t.Fatalf("rules %v, want %v:\n%s", rules(rep), tc.rules, strings.Join(rep.Refusals, "\n"))
			}
			if len(rep.Files) != 2 || !strings.HasSuffix(rep.Files[1], promotion.RecordPath("checkout", "production")) {
				t.Fatalf("files %v, want the overlay and the record only", rep.Files)
			}
			if rep.MergeBase == rep.Base {
				t.Fatalf("merge base %s is main's tip", rep.MergeBase)
			}
		})
	}
}
