package gate

import (
	"strings"
	"testing"
)

// TestCheckAfterMainMoved: the change is what the branch adds since it
// was cut from main (three-dot semantics). A protected change merged on
// main after the branch was cut is not part of the branch's change: diffing
// the two tips would report it (reversed) and refuse it.
func TestCheckAfterMainMoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.branch("feature", func() {
		k := staging + "/kustomization.yaml"
		f.write(map[string]string{k: strings.Replace(f.read(k), "count: 2", "count: 3", 1)})
	})
	k := production + "/kustomization.yaml"
	f.write(map[string]string{k: strings.Replace(f.read(k), "count: 6", "count: 8", 1)})
	f.commit("production capacity, merged on main after feature was cut")
	rep := f.check("feature")
	if !rep.OK || len(rep.Files) != 1 || !strings.HasSuffix(rep.Files[0], staging+"/kustomization.yaml") {
		t.Fatalf("ok %v, files %v, refusals %q: want only the branch's own change", rep.OK, rep.Files, rep.Refusals)
	}
	if rep.MergeBase == "" || rep.MergeBase == rep.Base {
		t.Fatalf("merge base %q, base %q: want the commit the branch was cut from", rep.MergeBase, rep.Base)
	}
	for _, e := range rep.Environments {
		for _, o := range e.Overlays {
			if e.Name == "production" && len(o.Changes) > 0 {
				t.Fatalf("production differences %+v: main's own change reported as the branch's", o.Changes)
			}
		}
	}
}
