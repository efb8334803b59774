package chainview

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/promotion"
)

// TestAdoptionSourceArrows: an adopted baseline (throughline adopt) cites no
// earlier environment; the gates accept it by its own live verification
// only (the target's arrows). Its source arrows say so, proven, instead of
// "chain broken" for a desired commit it never claimed.
func TestAdoptionSourceArrows(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	digest := "sha256:" + strings.Repeat("7c", 32)
	rec, err := promotion.NewCandidate("checkout", 1, promotion.Artifact{Image: "ghcr.io/x/checkout:1.4.2@" + digest, Digest: digest,
		SourceCommit: strings.Repeat("1", 40)}, promotion.Target{Environment: "production", Path: "apps/checkout/overlays/production",
		Cluster: "prod-eu-1", RenderedHash: digest, BaseRenderedHash: digest, Renderer: "v0.1.0"}, at, "throughline adopt")
	if err == nil {
		err = rec.VerifyByAdoption(at, "platform-team")
	}
	if err != nil {
		t.Fatal(err)
	}
	ch := &Chain{Record: rec}
	arrows, err := (&chainer{now: at}).sourceArrows(context.Background(), rec, ch)
	if err != nil {
		t.Fatal(err)
	}
	if len(arrows) != 3 {
		t.Fatalf("%d source arrows", len(arrows))
	}
	for _, a := range arrows {
		if a.Status != Proven || !strings.Contains(a.Summary, "adopt") {
			t.Errorf("%s: %s %q", a.Name, a.Status, a.Summary)
		}
	}
}
