package promote

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/promotion"
)

// TestCheckMovedTagFromRecords: the records in Git say which digest each
// tag had. A promotion of checkout:1.5.0@new, where an earlier record (in
// Git history, since replaced) recorded checkout:1.5.0 as another digest,
// is refused as a moved tag without any --drift-record file; with
// movedTags: warn in the policy it passes with the warning listed.
func TestCheckMovedTagFromRecords(t *testing.T) {
	t.Parallel()
	const movedDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name   string
		policy func(string) string
		rules  []string
		warned bool
	}{
		{"refused by default", func(s string) string { return s }, []string{gate.RuleMovedTag}, false},
		{"warned by policy", func(s string) string { return s + "movedTags: warn\n" }, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.unsignedApprovals()
			f.write(map[string]string{promotion.PolicyFile: tc.policy(f.read(promotion.PolicyFile))})
			// dev once recorded the tag 1.5.0 as another digest; the record
			// was replaced since (only Git's history still says so).
			file := promotion.RecordPath("checkout", "dev")
			rec, err := promotion.NewCandidate("checkout", 1,
				promotion.Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + movedDigest, Digest: movedDigest, SourceCommit: strings.Repeat("1", 40)},
				promotion.Target{Environment: "dev", Path: "apps/checkout/overlays/dev", Cluster: "dev", RenderedHash: "sha256:" + strings.Repeat("4", 64),
					BaseRenderedHash: "sha256:" + strings.Repeat("4", 64), Renderer: renderer}, time.Now().Add(-2*time.Hour), "ci")
			must(t, err)
			data, err := rec.Marshal()
			must(t, err)
			f.write(map[string]string{file: string(data)})
			f.commit("dev: checkout 1.5.0 (the tag's first digest)")
			rec, err = promotion.NewCandidate("checkout", 1,
				promotion.Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.1@" + oldDigest, Digest: oldDigest, SourceCommit: strings.Repeat("1", 40)},
				rec.Target, time.Now().Add(-time.Hour), "ci")
			must(t, err)
			data, err = rec.Marshal()
			must(t, err)
			f.write(map[string]string{file: string(data)})
			f.commit("dev: checkout 1.5.1 (the record is replaced)")
			now := time.Now()
			p := f.approved(now)
			rep := f.check(p.Branch, now)
			if got := rules(rep); !slices.Equal(got, tc.rules) {
				t.Fatalf("rules %v, want %v:\n%s", got, tc.rules, strings.Join(rep.Refusals, "\n"))
			}
			var warned bool
			for _, w := range append(rep.Findings, rep.Warnings...) {
				if w.Rule == gate.RuleMovedTag && strings.Contains(w.Reason, movedDigest) && strings.Contains(w.Reason, file) {
					warned = true
				}
			}
			if !warned || (len(rep.Warnings) > 0) != tc.warned {
				t.Fatalf("findings %+v warnings %+v: want the moved tag named with %s and %s", rep.Findings, rep.Warnings, movedDigest, file)
			}
		})
	}
}
