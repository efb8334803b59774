package promote

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/trust"
)

// RollbackResult is what Rollback did.
type RollbackResult struct {
	Proposal            *Proposal       `json:"proposal"`
	From                string          `json:"from"`
	To                  ledger.Accepted `json:"to"`
	IrreversibleWarning []string        `json:"irreversibleMigration,omitempty"`
	// Unproven lists acceptances Git claims without proof (a record
	// ACCEPTED without its evidence file, evidence disagreeing with the
	// record, a version of the record that cannot be used): never
	// rollback targets, reported so they get fixed.
	Unproven []ledger.Unproven `json:"unproven,omitempty"`
}

// RollbackRequest asks to roll app back in Env.
type RollbackRequest struct {
	App, Env string
	// To is a digest (sha256:<hex>, or 12+ hex digits) accepted before in
	// Env, or ledger.Previous.
	To string
	// Path is the environment's overlay, Cluster its cluster ("" for the
	// environment registry's; they must be Env's).
	Path, Cluster string
	// AcceptIrreversible rolls back although the current artifact's
	// workload is marked ledger.AnnotationIrreversible.
	AcceptIrreversible bool
	// Exists says whether the registry still has the image reference (an
	// error that cannot decide carries its exit code).
	Exists func(ctx context.Context, ref string) (bool, error)
	// Renderer is throughline's version.
	Renderer string
	// Trust are the registry options and cache the supply-chain gate
	// re-verifies the rollback target's recorded evidence with (trust.go).
	Trust trust.Options
	// Now is the time the gates judge at (zero: time.Now()).
	Now time.Time
	// ForOverride opens the rollback although Env's freeze holds it (or
	// it is outside Env's windows): it then goes in only with signed
	// freeze overrides (ProposeRequest.ForOverride).
	ForOverride bool
}

// Rollback proposes, as a new attempt through the propose path, a digest
// Env accepted before as Git proves it: still in the registry, not away
// from an irreversible migration unless acknowledged, and VERIFIED by its
// prior acceptance.
func Rollback(ctx context.Context, r *gitops.Repo, req RollbackRequest) (*RollbackResult, error) {
	app, env := req.App, req.Env
	baseRev, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	target, err := resolveRequest(ctx, r, baseRev, ProposeRequest{App: app, From: env, To: env, Path: req.Path, Cluster: req.Cluster,
		Renderer: req.Renderer, Now: req.Now, ForOverride: req.ForOverride})
	if err != nil {
		return nil, err
	}
	req.Path = target.Path
	cur, err := promotion.ReadRecord(ctx, r, baseRev, app, env)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, exitcode.Refuse(RuleRollbackTarget, "no promotion record %s on %s: nothing was ever accepted in %s", promotion.RecordPath(app,
			env), r.Base, env)
	}
	hist, err := ledger.History(ctx, r, baseRev, app, env)
	if err != nil {
		return nil, err
	}
	pick, err := ledger.Pick(hist, req.To, cur.Artifact.Digest, env)
	if err != nil {
		return nil, err
	}
	if err := stillInRegistry(ctx, req, pick); err != nil {
		return nil, err
	}
	if err := rollbackTrust(ctx, r, baseRev, pick, env, req.Trust); err != nil {
		return nil, err
	}
	if err := gate.ChartsServed(ctx, r.Charts, pick.Artifact.Charts); err != nil {
		return nil, err
	}
	marked, err := irreversible(ctx, r, baseRev, req, cur.Artifact.Digest)
	if err != nil {
		return nil, err
	}
	from := cur.Artifact.Digest
	p, err := proposeArtifact(ctx, r, baseRev, pick.Artifact, target,
		proposeOptions{
			By:         "throughline rollback",
			Rollback:   true,
			MinAttempt: hist.Attempts[pick.Artifact.Digest],
			Verify: func(rec *promotion.Record) error {
				return rec.VerifyByPriorAcceptance(pick.Prior(), pick.DesiredRevision, pick.ObservedRevision, pick.RenderedHash, target.now(),
					"throughline rollback")
			},
			Message: func(rec *promotion.Record) string {
				return fmt.Sprintf("rollback %s in %s to %s\n\nPromotion: %s\nAttempt-Key: %s %s %s %d\n"+
					"Rollback-From: %s\nRollback-To: %s (%s, accepted at %s)\n",
					app, env, ledger.ShortDigest(rec.Artifact.Digest), rec.PromotionID, app, rec.Artifact.Digest, env, rec.Attempt,
					from, pick.Artifact.Digest, pick.PromotionID, pick.Commit)
			},
		})
	if err != nil {
		return nil, err
	}
	return &RollbackResult{Proposal: p, From: from, To: pick, IrreversibleWarning: marked, Unproven: hist.Unproven}, nil
}

// stillInRegistry refuses a rollback target the registry deleted.
func stillInRegistry(ctx context.Context, req RollbackRequest, pick ledger.Accepted) error {
	name, _ := overlay.SplitImage(pick.Artifact.Image)
	ok, err := req.Exists(ctx, name+"@"+pick.Artifact.Digest)
	if err != nil {
		return fmt.Errorf("rollback target %s@%s: %w", name, pick.Artifact.Digest, err)
	}
	if !ok {
		return exitcode.Refuse(RuleRollbackTarget,
			"rollback target %s@%s no longer exists in the registry (deleted): pick another accepted digest", name, pick.Artifact.Digest)
	}
	return nil
}

// irreversible lists the workloads of the artifact desired now (digest)
// marked ledger.AnnotationIrreversible, refusing them unless the request
// acknowledges them.
func irreversible(ctx context.Context, r *gitops.Repo, baseRev string, req RollbackRequest, digest string) ([]string, error) {
	objs, err := renderAt(ctx, r, baseRev, req.Path)
	if err != nil {
		return nil, err
	}
	marked := ledger.Irreversible(objs, digest)
	if len(marked) > 0 && !req.AcceptIrreversible {
		return nil, exitcode.Refuse(RuleRollbackTarget,
			"the current artifact %s is marked %s=\"true\" on %s: the older artifact may not read the migrated data; "+
				"roll forward instead, or pass --accept-irreversible-migration", digest, ledger.AnnotationIrreversible, strings.Join(marked, ", "))
	}
	return marked, nil
}

// renderAt renders the overlay at p as it is at rev, without policy.
func renderAt(ctx context.Context, r *gitops.Repo, rev, p string) ([]render.Object, error) {
	tree, err := r.Tree(ctx, rev)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tree.Close() }() // a temporary export; the result does not depend on its removal
	objs, _, err := tree.Render(ctx, p)
	return objs, err
}
