package notifier

import (
	"context"
	"fmt"
	"path"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// committedAcceptance compares, for a Flux delivery, the Acceptance the
// target overlay commits at the observed revision (the Flux setup:
// throughline-acceptance.yaml, which Flux applies as it is) with the
// record's proposed rendered hash and with the live Acceptance: why the
// promotion halts ("" when they agree, or the overlay commits none, or the
// delivery is Argo CD's, whose plugin renders the Acceptance); one that
// does not parse halts it too. unapplied is set when the only disagreement
// is the live Acceptance's (the committed one is the record's): decide
// waits for a controller that reports it did not apply. An error is a
// failure to read Git.
func (p *Processor) committedAcceptance(ctx context.Context, ev Event, rec *promotion.Record, live *Live) (why string, unapplied bool, err error) {
	if ev.Source != "flux" {
		return "", false, nil
	}
	file := path.Join(rec.Target.Path, acceptance.File)
	parse := func(file string, data []byte) (string, error) {
		objs, err := render.DecodeManifests(data, file)
		if err != nil {
			return "", err
		}
		for _, o := range objs {
			if acceptance.IsAcceptance(o) {
				a, err := acceptance.FromObject(o)
				return a.Spec.RenderedHash, err
			}
		}
		return "", fmt.Errorf("no Acceptance in %s", file)
	}
	at := ev.Revision
	if rec.IsOCI() {
		at = rec.Reconciling.DesiredCommit // the observed artifact is the desired one, built from this commit
	}
	committed, found, err := gitops.Read(ctx, &gitops.Repo{Repo: p.Git.Repo}, at, file, parse)
	switch {
	case exitcode.Code(err) == exitcode.Invalid:
		return fmt.Sprintf("the committed Acceptance %s at %s cannot be read: %v", file, at, err), false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading the committed Acceptance %s at %s: %w", file, at, err)
	case !found:
		return "", false, nil
	case rec.Target.RenderedHash != "" && committed != rec.Target.RenderedHash:
		return fmt.Sprintf("rendered hash mismatch: the committed Acceptance %s at %s declares %s, the promotion proposed %s "+
			"(stale: propose and rollback refresh it, promote check refuses it stale)", file, at, committed, rec.Target.RenderedHash), false, nil
	case live.RenderedHash != committed:
		return fmt.Sprintf("rendered hash mismatch: the live Acceptance %s/%s declares %s, the one committed in %s at %s declares %s: "+
			"Flux did not apply the committed Acceptance", live.Namespace, live.Name, live.RenderedHash, file, at, committed), true, nil
	}
	return "", false, nil
}
