package notifier

import (
	"context"
	"errors"
	"fmt"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
)

// renderUnchanged decides an Argo CD Application whose last sync
// operation is at an ancestor of the desired commit (Earlier) because the
// merge changed nothing live: Argo CD runs no sync when a new commit
// renders what already runs, so operationState.syncResult.revision stays
// behind while status.sync.revision moves on. When that Application is
// Synced (not degraded) at a status.sync.revision that Git proves is the
// desired commit or a later one, and its live Acceptance declares exactly
// the approved rendered hash, ev is observed at status.sync.revision
// (ev.Revision is set to it) and decided there, by the rendered-hash rule
// of later commits; the returned note says so for the evidence. Anything
// less keeps Earlier (waited for until the reconcileDeadline). OCI
// sources are not concerned: an artifact digest has no descent.
func (p *Processor) renderUnchanged(ctx context.Context, ev *Event, rec *promotion.Record) (evidence.Relation, string, error) {
	if ev.Source != "argocd" || ev.Degraded || !ev.Synced || ev.SyncRevision == "" || rec.IsOCI() || rec.Target.RenderedHash == "" {
		return evidence.Earlier, "", nil
	}
	desired := rec.Reconciling.DesiredRevision
	rel, err := evidence.Relate(ctx, p.Git.IsAncestor, desired, ev.SyncRevision)
	if err != nil {
		return evidence.Earlier, "", fmt.Errorf("relating status.sync.revision %s of %s to the desired %s: %w",
			ev.SyncRevision, reporter(*ev), desired, err)
	}
	if rel != evidence.Desired && rel != evidence.Later {
		return evidence.Earlier, "", nil
	}
	live, err := p.Live.Get(ctx, *ev)
	switch {
	case errors.Is(err, ErrNoAcceptance), errors.Is(err, ErrUnbound), errors.Is(err, ErrAmbiguous):
		return evidence.Earlier, "", nil // decided (or refused) when the sync revision is reported again
	case err != nil:
		return evidence.Earlier, "", err
	case live.RenderedHash != rec.Target.RenderedHash:
		return evidence.Earlier, "", nil
	}
	note := fmt.Sprintf("Argo CD ran no sync: its last sync is at %s, an ancestor of the desired %s; status.sync.revision %s is Synced "+
		"and the live Acceptance declares the approved %s", ev.Revision, desired, ev.SyncRevision, live.RenderedHash)
	ev.Revision = ev.SyncRevision
	return rel, note, nil
}
