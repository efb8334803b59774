package notifier

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

// commitAcceptance commits, on origin's main, the overlay's committed
// Acceptance (the Flux setup) declaring hash, and returns the commit.
func (f *fixture) commitAcceptance(app, hash string) string {
	t := f.t
	dir := filepath.Join(filepath.Dir(f.origin), "acc")
	gittest.Run(t, filepath.Dir(dir), "clone", "-q", f.origin, dir)
	commit := gittest.Commit(t, dir, "the committed Acceptance", map[string]string{
		"apps/" + app + "/overlays/production/throughline-acceptance.yaml": "apiVersion: throughline.dev/v1alpha1\nkind: Acceptance\nmetadata:\n  name: " +
			app + "\n  namespace: shop\nspec:\n  app: " + app + "\n  environment: production\n  renderedHash: " + hash + "\n  objectCount: 2\n  workloads: []\n"})
	gittest.Run(t, dir, "push", "-q", "origin", "main")
	return commit
}

// TestFluxCommittedAcceptance: for Flux, the notifier compares the
// Acceptance committed in the overlay at the observed revision with the
// record and with the live one.
func TestFluxCommittedAcceptance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, committed, live string
		result                string
		reason                string
	}{
		{"fresh and applied", hashA, hashA, resultAccepted, ""},
		{"stale although the live one agrees", hashB, hashA, resultHalted, "the committed Acceptance apps/checkout/overlays/production/throughline-acceptance.yaml"},
		{"stale and applied", hashB, hashB, resultHalted, "(stale: propose and rollback refresh it"},
		{"fresh but not applied", hashA, hashB, resultHalted, "Flux did not apply the committed Acceptance"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			later := f.commitAcceptance("checkout", c.committed)
			live := verified("checkout")
			live.RenderedHash, live.Status.RenderedHash = c.live, c.live
			f.live.set("checkout", live)
			code, rep := f.flux(fluxBody(t, "checkout", later, "ReconciliationSucceeded"))
			if code != 200 || rep.Result != c.result || !strings.Contains(rep.Reason, c.reason) {
				t.Fatalf("%d %+v, want %s saying %q", code, rep, c.result, c.reason)
			}
			if rec := f.checkoutRecord(); (c.result == resultAccepted) != (rec.State == promotion.Accepted) {
				t.Fatalf("record %s %q", rec.State, rec.Reason)
			}
		})
	}
}
