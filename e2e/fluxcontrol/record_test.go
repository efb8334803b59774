//go:build e2e

package fluxcontrol

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
)

// writeStagingRecord writes staging's promotion record of checkout in the
// clone, RECONCILING towards desired (the commit of the overlay with its
// Acceptance), built through the promotion state machine as promote does:
// a second attempt of the example's digest, proposed for the rendered hash
// of the committed Acceptance. It returns the record's promotion id.
func writeStagingRecord(t *testing.T, g *gitops, desired string) string {
	t.Helper()
	var hash string
	for _, u := range readYAML(t, filepath.Join(g.dir, overlay, "throughline-acceptance.yaml")) {
		if u.GetKind() == "Acceptance" {
			hash = nested(u, "spec", "renderedHash")
		}
	}
	if hash == "" {
		t.Fatalf("%s/throughline-acceptance.yaml: no Acceptance with spec.renderedHash", overlay)
	}
	now := time.Now().UTC()
	tg := promotion.Target{Environment: "staging", Path: overlay, Cluster: "staging-eu-1", RenderedHash: hash,
		BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"}
	art := promotion.Artifact{Image: imageRepo + ":1.4.2@" + digest, Digest: digest, SourceCommit: strings.Repeat("0d1c", 10)}
	rec, err := promotion.NewCandidate(accName, 2, art, tg, now, "throughline promote propose")
	must(t, err)
	devRev := strings.Repeat("7a6b", 10)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: devRev, ObservedRevision: devRev,
		RenderedHash: "sha256:" + strings.Repeat("3f", 32), RuntimeEvidence: evidence.Path("dev", accName, "checkout-dev-9c2f1e0d7b6a-1")},
		now, "throughline serve"))
	must(t, rec.Approve("alice@example.com", rec.InputFor("v0.1.0"), now.Add(24*time.Hour), now))
	must(t, rec.Reconcile(desired, now, "throughline promote"))
	y, err := rec.Marshal()
	must(t, err)
	must(t, os.WriteFile(filepath.Join(g.dir, promotion.RecordPath(accName, "staging")), y, 0o644))
	return rec.PromotionID
}

// onServer reads file at the tip of the Git server's main ("" when absent)
// and returns that tip.
func (g *gitops) onServer(file string) (content, tip string) {
	g.t.Helper()
	g.git("fetch", "-q", "origin")
	tip = g.git("rev-parse", "origin/main")
	if g.git("ls-tree", "--name-only", tip, "--", file) == "" {
		return "", tip
	}
	return g.git("show", tip+":"+file), tip
}

const evidenceArrow = "staging observed revision -> staging runtime evidence"

// stagingEvidence waits for the notifier's evidence commit on the Git
// server and checks it against the Kustomization ks (Ready): the evidence/v1
// file ACCEPTED at the commit of ks's status.lastAppliedRevision, a later
// commit than desired rendering the same objects, the record ACCEPTED and
// pointing at it, in exactly one commit on top of the one Flux applied. It
// returns the evidence commit.
func stagingEvidence(ctx context.Context, t *testing.T, g *gitops, deliv *deliveries, ks *unstructured.Unstructured,
	desired, promotionID string) string {
	t.Helper()
	lar := nested(ks, "status", "lastAppliedRevision")
	applied, ok := strings.CutPrefix(lar, "main@sha1:")
	if !ok || !promotion.ValidRevision(applied) {
		t.Fatalf("%s: Kustomization lastAppliedRevision %q is not main@sha1:<commit>", evidenceArrow, lar)
	}
	recPath, evPath := promotion.RecordPath(accName, "staging"), evidence.Path("staging", accName, promotionID)
	var rec *promotion.Record
	var tip string
	eventually(ctx, t, time.Minute, evidenceArrow, func() string {
		var raw string
		raw, tip = g.onServer(recPath)
		var err error
		if rec, err = promotion.Parse(recPath, []byte(raw)); err != nil {
			t.Fatalf("%s: %s at %s: %v", evidenceArrow, recPath, tip, err)
		}
		if rec.PromotionID != promotionID {
			t.Fatalf("%s: %s at %s is promotion %s, want the committed %s", evidenceArrow, recPath, tip, rec.PromotionID, promotionID)
		}
		if rec.State == promotion.Reconciling {
			return fmt.Sprintf("record RECONCILING at %s; deliveries: %s", tip, deliv.summary())
		}
		return ""
	})
	if rec.State != promotion.Accepted || rec.Accepted == nil {
		t.Fatalf("%s: record %s at %s, want ACCEPTED: %s", evidenceArrow, rec.State, tip, rec.Reason)
	}
	ev, err := evidence.Parse(evPath, []byte(g.git("show", tip+":"+evPath)))
	if err != nil {
		t.Fatalf("%s: %v", evidenceArrow, err)
	}
	switch {
	case ev.Decision != promotion.Accepted:
		t.Fatalf("%s: evidence %s decision %s (%s), want ACCEPTED", evidenceArrow, evPath, ev.Decision, ev.Reason)
	case ev.ObservedRevision != applied:
		t.Fatalf("%s: evidence observedRevision %s, the Kustomization's lastAppliedRevision is %s", evidenceArrow, ev.ObservedRevision, lar)
	case ev.DesiredRevision != desired:
		t.Fatalf("%s: evidence desiredRevision %s, want the record's %s", evidenceArrow, ev.DesiredRevision, desired)
	case applied != desired && !strings.Contains(ev.Reason, "later than the desired"):
		t.Fatalf("%s: observed %s is not the desired %s, but the evidence does not say why it counts: %q", evidenceArrow, applied, desired, ev.Reason)
	case ev.ReportedBy.Source != "flux" || ev.Acceptance != appNS+"/"+accName:
		t.Fatalf("%s: evidence reported by %+v for Acceptance %q, want flux and %s/%s", evidenceArrow, ev.ReportedBy, ev.Acceptance, appNS, accName)
	case rec.Accepted.ObservedRevision != applied || rec.Accepted.RuntimeEvidence != evPath:
		t.Fatalf("%s: record accepted %+v, want observed %s and evidence %s", evidenceArrow, rec.Accepted, applied, evPath)
	}
	if why := ev.CheckPods(digest); why != "" {
		t.Fatalf("%s: evidence Pods: %s", evidenceArrow, why)
	}
	if n := g.git("rev-list", "--count", applied+".."+tip); n != "1" {
		t.Fatalf("%s: %s commits on main after the applied %s, want exactly one evidence commit", evidenceArrow, n, applied)
	}
	sigPath := evidence.SignaturePath(evPath)
	if files := strings.Fields(g.git("diff", "--name-only", applied, tip)); strings.Join(files, " ") != evPath+" "+sigPath+" "+recPath {
		t.Fatalf("%s: the evidence commit %s changes %v, want %s, its signature %s and %s", evidenceArrow, tip, files, evPath, sigPath, recPath)
	}
	found := false
	for _, d := range deliv.list() {
		found = found || d.Result == "accepted" && d.Revision == applied && d.Commit == tip
	}
	if !found {
		t.Fatalf("%s: no delivery answered accepted with commit %s; deliveries: %s", evidenceArrow, tip, deliv.summary())
	}
	t.Logf("%s: commit %s: observed %s (desired %s): %s", evidenceArrow, tip[:12], applied[:12], desired[:12], ev.Reason)
	return tip
}

// repeatedEventCommitsNothing waits until the Kustomization has applied the
// evidence commit evCommit and its event has reached the notifier, then
// checks that main is still at evCommit and that only one delivery
// committed evidence.
func repeatedEventCommitsNothing(ctx context.Context, t *testing.T, c client.Client, g *gitops, deliv *deliveries, evCommit string) {
	t.Helper()
	eventually(ctx, t, 2*time.Minute, evidenceArrow+" (once)", func() string {
		ks, why := get(ctx, c, ksAPI, "Kustomization", fluxNS, ksName)
		if why != "" {
			return why
		}
		if got := nested(ks, "status", "lastAppliedRevision"); got != fluxRevision(evCommit) {
			return "Kustomization lastAppliedRevision " + got + ", want the evidence commit " + fluxRevision(evCommit)
		}
		for _, d := range deliv.list() {
			if d.Revision == evCommit {
				t.Logf("notifier: the delivery for the evidence commit answered %d %s (%v)", d.Status, d.Result, d.Err)
				return ""
			}
		}
		return "no delivery for the evidence commit " + evCommit + "; deliveries: " + deliv.summary()
	})
	if _, tip := g.onServer(promotion.RecordPath(accName, "staging")); tip != evCommit {
		t.Fatalf("%s: main moved from the evidence commit %s to %s: %s", evidenceArrow, evCommit, tip, g.git("log", "--format=%h %s", evCommit+".."+tip))
	}
	n := 0
	for _, d := range deliv.list() {
		if d.Result == "malformed" {
			t.Fatalf("notifier refused a real Flux event as malformed: %v", d.Err)
		}
		if d.Commit != "" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%s: %d deliveries committed evidence, want exactly one; deliveries: %s", evidenceArrow, n, deliv.summary())
	}
	t.Logf("notifier deliveries: %s", deliv.summary())
}

// summary lists the deliveries as result@revision.
func (d *deliveries) summary() string {
	var out []string
	for _, x := range d.list() {
		out = append(out, fmt.Sprintf("%d %s@%.12s", x.Status, x.Result, x.Revision))
	}
	return strings.Join(out, ", ")
}
