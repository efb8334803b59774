package promote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
)

// Proposal is what Propose (or Rollback) did.
type Proposal struct {
	Record   *promotion.Record  `json:"record"`
	Branch   string             `json:"branch"`
	Commit   string             `json:"commit"`
	Existing bool               `json:"existing"`
	Changes  []promotion.Change `json:"changes"`
	PR       string             `json:"pullRequest,omitempty"`
	// Closed says why the target does not accept promotions now, when the
	// attempt was opened for a freeze override (ProposeRequest.ForOverride).
	Closed string `json:"closed,omitempty"`
	// Superseded are the open attempts of the same app and environment
	// this new attempt supersedes (its commit message names them,
	// Supersedes lines): their branches deleted, compare-and-swap, and
	// their pull requests closed by OpenPullRequest with a forge.
	Superseded []Superseded `json:"superseded,omitempty"`
}

// Superseded is an open attempt a new attempt superseded.
type Superseded struct {
	PromotionID string `json:"promotionId"`
	Branch      string `json:"branch"`
	// Commit is the branch's tip when it was superseded: it is deleted
	// only while still there (never over someone's new commit).
	Commit string `json:"commit"`
	// Deleted: the branch is gone; else NotDeleted says why it is left.
	Deleted    bool   `json:"deleted"`
	NotDeleted string `json:"notDeleted,omitempty"`
	// PullRequests are the numbers of its pull requests closed.
	PullRequests []int `json:"pullRequests,omitempty"`
}

// SupersedesLine begins a line of a new attempt's commit message naming
// an attempt it supersedes: "Supersedes: <promotionId> (<branch>)".
const SupersedesLine = "Supersedes: "

// ProposeRequest asks to promote app's digest accepted in From to To.
type ProposeRequest struct {
	App, From, To string
	// Path is the target overlay, relative to the GitOps root ("" for
	// the environment registry's, else DefaultPath); it must be To's.
	Path string
	// Cluster is the target cluster ("" for the registry's, else the
	// environment name); it must be To's.
	Cluster string
	// Renderer is throughline's version, recorded in the target.
	Renderer string
	// Trust are the registry options and cache the supply-chain gate
	// re-verifies the recorded evidence with (trust.go).
	Trust trust.Options
	// Now is the time the gates judge at: the target's windows and
	// freezes, the evidence's age, the record's CANDIDATE entry (zero:
	// time.Now()).
	Now time.Time
	// ForOverride opens the attempt although To is closed (a freeze, or
	// outside its windows): it then goes in only with signed freeze
	// overrides (Override), which promote check and reconcile require.
	// Without it a closed environment takes no new attempt.
	ForOverride bool
}

// now is req.Now, or the time now.
func (req ProposeRequest) now() time.Time {
	if req.Now.IsZero() {
		return time.Now()
	}
	return req.Now
}

// Propose reads the digest ACCEPTED in req.From's record on the base
// branch and proposes it for req.To: the target overlay with that digest
// and a CANDIDATE record, committed on the attempt branch (compare-and-swap,
// never forced). The same request again returns the existing attempt.
func Propose(ctx context.Context, r *gitops.Repo, req ProposeRequest) (*Proposal, error) {
	baseRev, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	if req, err = resolveRequest(ctx, r, baseRev, req); err != nil {
		return nil, err
	}
	app, from, to := req.App, req.From, req.To
	src, err := promotion.ReadRecord(ctx, r, baseRev, app, from)
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, exitcode.Refuse(RulePromotion, "no promotion record %s on %s: nothing is verified in %s", promotion.RecordPath(app, from), r.Base, from)
	}
	if src.State != promotion.Accepted {
		return nil, exitcode.Refuse(RulePromotion, "%s is %s, not ACCEPTED: digest %s is not verified in %s",
			promotion.RecordPath(app, from), src.State, src.Artifact.Digest, from)
	}
	if _, err := ledger.ReadSourceEvidence(ctx, r, baseRev, app, from, src.Artifact.Digest, req.now()); err != nil {
		return nil, err
	}
	if err := proposeTrust(ctx, r, baseRev, src, to, req.Trust); err != nil {
		return nil, err
	}
	art := src.Artifact
	if art.Charts, err = gate.SourceCharts(ctx, r, baseRev, src); err != nil {
		return nil, err
	}
	return proposeArtifact(ctx, r, baseRev, art, req, proposeOptions{
		By: "throughline promote propose",
		Message: func(rec *promotion.Record) string {
			return fmt.Sprintf("promote %s %s to %s\n\nPromotion: %s\nAttempt-Key: %s %s %s %d\nSource: %s (%s)\n",
				app, ledger.ShortDigest(rec.Artifact.Digest), to, rec.PromotionID, app, rec.Artifact.Digest, to, rec.Attempt,
				from, promotion.RecordPath(app, from))
		},
	})
}

// proposeOptions are what differs between the callers of the propose path
// (Propose, Rollback).
type proposeOptions struct {
	// By is recorded as the author of the CANDIDATE transition.
	By string
	// Message is the commit message for the new record.
	Message func(rec *promotion.Record) string
	// MinAttempt: the new attempt number is above it (a rollback to a
	// digest accepted before must not reuse that digest's old attempts).
	MinAttempt int
	// Verify, when set, records the VERIFIED gate on the new CANDIDATE
	// before it is written (a rollback: the environment's own earlier
	// acceptance).
	Verify func(rec *promotion.Record) error
	// Candidacy: the new record is the artifact's candidacy (promote
	// candidate): its Artifact.Evidence.Candidacy is its own promotion id.
	Candidacy bool
	// Rollback: the artifact is one the environment accepted before (its
	// rollbackInFreeze may let it through a closed window).
	Rollback bool
}

// edit is the target overlay at the base revision with the artifact's
// digest written into it, rendered before and after.
type edit struct {
	kfile   string
	edited  []byte
	changed bool
	target  promotion.Target
	changes []promotion.Change
	// accFile is the overlay's committed Acceptance (the Flux setup),
	// refreshed to acc ("" when it commits none).
	accFile string
	acc     []byte
	// charts are the target's chart pins written for art.Charts.
	charts *chartEdit
	// values are a chart app's value files with the digest written.
	values map[string][]byte
}

// editTarget writes art's digest into the target overlay of req in an
// export of baseRev, renders it before and after and checks every policy
// rule and that the target runs only that digest of the artifact.
func editTarget(ctx context.Context, r *gitops.Repo, baseRev string, art promotion.Artifact, req ProposeRequest) (*edit, error) {
	tree, err := r.Tree(ctx, baseRev)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tree.Close() }() // a temporary export; the result does not depend on its removal
	before, baseHash, err := tree.Render(ctx, req.Path)
	if err != nil {
		return nil, err
	}
	kfile, err := gate.TargetFile(ctx, tree, req.Path)
	if err != nil {
		return nil, err
	}
	data, err := tree.OptionalFile(kfile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", kfile, err)
	}
	name, tag := overlay.SplitImage(art.Image)
	e := &edit{kfile: kfile, edited: data}
	switch gate.ChartListOf(kfile) {
	case gate.HelmChartsList:
		if e.edited, e.changed, err = overlay.SetImageDigest(data, kfile, name, tag, art.Digest); err != nil {
			return nil, err
		}
	case gate.DependenciesList:
		if e.values, err = writeChartValuesDigest(tree, req.Path, before, name, art.Digest); err != nil {
			return nil, err
		}
	}
	if e.charts, err = writeCharts(tree, kfile, e.edited, art.Charts); err != nil {
		return nil, err
	}
	e.edited, e.changed = e.charts.kdata, e.changed || e.charts.kchanged || e.charts.locked
	if e.charts.locked {
		if err := tree.WriteFile(e.charts.lockFile, e.charts.lockData); err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.charts.lockFile, err)
		}
	}
	if err := tree.WriteFile(kfile, e.edited); err != nil {
		return nil, fmt.Errorf("writing %s: %w", kfile, err)
	}
	d, err := tree.Declare(ctx, req.Path, req.To, req.Renderer)
	if err != nil {
		return nil, err
	}
	if _, others, n := gate.ArtifactImages(d, art.Image); n == 0 || len(others) > 0 {
		return nil, exitcode.Refuse(RulePromotion, "after writing %s into %s, the target does not run only that digest of %s: %d container(s), others: %s",
			art.Digest, kfile, name, n, strings.Join(others, "; "))
	}
	if err := gate.VerifyTargetCharts(d, req.Path, art.Charts); err != nil {
		return nil, err
	}
	after, _, err := tree.Render(ctx, req.Path)
	if err != nil {
		return nil, err
	}
	if e.accFile, e.acc, err = gate.RefreshAcceptance(ctx, tree, req.Path, d, req.Renderer); err != nil {
		return nil, err
	}
	e.target = promotion.Target{Environment: req.To, Path: req.Path, Cluster: req.Cluster,
		RenderedHash: d.Hash, BaseRenderedHash: baseHash, Renderer: req.Renderer}
	e.changes = promotion.Classify(before, after)
	return e, nil
}

// proposeArtifact is the propose path (req resolved by resolveRequest):
// write art's digest into the target overlay at baseRev, check policy, and commit it with a CANDIDATE record on
// the attempt branch (compare-and-swap, never forced).
func proposeArtifact(ctx context.Context, r *gitops.Repo, baseRev string, art promotion.Artifact, req ProposeRequest,
	o proposeOptions) (p *Proposal, err error) {
	app, to := req.App, req.To
	// A closed environment (outside its windows, in a freeze, as the
	// policy at the base says) takes no new attempt, unless it is opened
	// for a freeze override (which the PR gate and reconcile then require).
	closed := ""
	if err := gate.Window(ctx, r, baseRev, to, req.now(), o.Rollback); err != nil {
		var re *exitcode.Refusal
		if !req.ForOverride || !errors.As(err, &re) {
			return nil, err
		}
		closed = fmt.Sprintf("%s (%s): %s", re.Rule, re.Field, re.Reason)
		defer func() {
			if p != nil {
				p.Closed = closed
			}
		}()
	}
	e, err := editTarget(ctx, r, baseRev, art, req)
	if err != nil {
		return nil, err
	}
	// The same request again is the existing attempt.
	cur, err := promotion.ReadRecord(ctx, r, baseRev, app, to)
	if err != nil {
		return nil, err
	}
	maxAttempt := o.MinAttempt
	if cur != nil && cur.Artifact.Digest == art.Digest {
		maxAttempt = max(maxAttempt, cur.Attempt)
		// A HALTED or REJECTED attempt never blocks the next one: the same
		// digest makes attempt n+1 (its overlay edit may be empty).
		same := cur.SameAttempt(art, e.target) || !e.changed && cur.SameAttempt(art, targetWithBase(e.target, cur.Target.BaseRenderedHash))
		if !stopped(cur) && same {
			return &Proposal{Record: cur, Branch: cur.Key().Branch(), Commit: baseRev, Existing: true, Changes: e.changes}, nil
		}
	}
	if !e.changed && cur == nil {
		return nil, exitcode.Refuse(RulePromotion, "%s already runs %s and has no record: nothing to propose", req.Path, art.Digest)
	}
	p, maxAttempt, err = openAttempt(ctx, r, baseRev, app, to, cur, art, e, maxAttempt)
	if p != nil || err != nil {
		return p, err
	}
	rec, err := promotion.NewCandidate(app, maxAttempt+1, art, e.target, req.now(), o.By)
	if err != nil {
		return nil, err
	}
	if o.Candidacy && rec.Artifact.Evidence != nil {
		rec.Artifact.Evidence.Candidacy = rec.PromotionID
	}
	if o.Verify != nil {
		if err := o.Verify(rec); err != nil {
			return nil, exitcode.RefuseErr(RuleTransition, err)
		}
	}
	if err := promotion.CheckUpdate(cur, rec); err != nil && cur != nil && cur.Artifact.Digest == rec.Artifact.Digest && cur.Attempt == rec.Attempt {
		return nil, exitcode.Refuse(RulePromotion, "%s", err.Error())
	}
	sup, err := openAttemptsOf(ctx, r, baseRev, app, to, cur)
	if err != nil {
		return nil, err
	}
	msg := o.Message(rec)
	for _, a := range sup {
		msg += fmt.Sprintf("%s%s (%s)\n", SupersedesLine, a.PromotionID, a.Branch)
	}
	p, err = commitAttempt(ctx, r, baseRev, rec, e, msg)
	if err != nil || p.Existing {
		return p, err
	}
	p.Superseded = closeSuperseded(ctx, r, sup)
	return p, nil
}

// openAttemptsOf are the open attempts of app/to (onBase: its record at
// baseRev), with their branches' tips: what a new attempt supersedes.
func openAttemptsOf(ctx context.Context, r *gitops.Repo, baseRev, app, to string, onBase *promotion.Record) ([]Superseded, error) {
	bs, names, err := attemptBranchTips(ctx, r, app, to)
	if err != nil {
		return nil, err
	}
	var out []Superseded
	for _, b := range names {
		rec, err := promotion.ReadRecord(ctx, r, bs[b], app, to)
		if err != nil || rec == nil {
			continue // not an attempt this can judge: left alone
		}
		open, _, err := isOpen(ctx, r, baseRev, bs[b], rec, onBase)
		if err != nil {
			return nil, err
		}
		if open {
			out = append(out, Superseded{PromotionID: rec.PromotionID, Branch: b, Commit: bs[b]})
		}
	}
	return out, nil
}

// closeSuperseded deletes the branch of each superseded attempt while it
// is still at the tip it was superseded at (compare-and-swap: a branch
// someone pushed to since is left, saying so). The new attempt is
// committed either way: a leftover branch is only clutter.
func closeSuperseded(ctx context.Context, r *gitops.Repo, sup []Superseded) []Superseded {
	for i, a := range sup {
		err := r.DeleteBranch(ctx, a.Branch, a.Commit)
		switch {
		case err == nil, errors.Is(err, gitrepo.ErrNotFound):
			sup[i].Deleted = true
		case errors.Is(err, gitrepo.ErrRejected):
			sup[i].NotDeleted = fmt.Sprintf("%s moved since %s: left as it is (%v)", a.Branch, gitrepo.Short(a.Commit), err)
		default:
			sup[i].NotDeleted = err.Error()
		}
	}
	return sup
}

// openAttempt looks at the attempt branches of art's digest for app/to
// (onBase: the record at baseRev): the proposal when an open one holds
// this very attempt, else the highest attempt number seen (at least
// maxAttempt). A finished attempt (merged, HALTED, REJECTED) is never
// returned: the same request makes the next attempt.
func openAttempt(ctx context.Context, r *gitops.Repo, baseRev, app, to string, onBase *promotion.Record, art promotion.Artifact, e *edit,
	maxAttempt int) (*Proposal, int, error) {
	branches, err := r.Branches(ctx, promotion.BranchGlob(app, to, art.Digest))
	if err != nil {
		return nil, 0, err
	}
	for b := range branches {
		rec, err := branchRecord(ctx, r, b, app, to)
		if err != nil {
			return nil, 0, err
		}
		if rec == nil || rec.Artifact.Digest != art.Digest {
			continue
		}
		open, _, err := isOpen(ctx, r, baseRev, branches[b], rec, onBase)
		if err != nil {
			return nil, 0, err
		}
		if open && rec.SameAttempt(art, e.target) {
			return &Proposal{Record: rec, Branch: b, Commit: branches[b], Existing: true, Changes: e.changes}, 0, nil
		}
		maxAttempt = max(maxAttempt, rec.Attempt)
	}
	return nil, maxAttempt, nil
}

// commitAttempt commits rec (and the edited kustomization) on baseRev and
// creates the attempt branch; when another proposer created it first, its
// attempt is returned.
func commitAttempt(ctx context.Context, r *gitops.Repo, baseRev string, rec *promotion.Record, e *edit, msg string) (*Proposal, error) {
	app, to := rec.App, rec.Target.Environment
	recData, err := rec.Marshal()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{promotion.RecordPath(app, to): recData}
	if e.changed {
		files[e.kfile] = e.edited
	}
	if e.accFile != "" {
		files[e.accFile] = e.acc
	}
	if e.charts != nil && e.charts.locked {
		files[e.charts.lockFile] = e.charts.lockData
	}
	for f, data := range e.values {
		files[f] = data
	}
	sha, err := r.Commit(ctx, baseRev, files, msg)
	if err != nil {
		return nil, err
	}
	branch := rec.Key().Branch()
	if err := r.SetBranch(ctx, branch, "", sha); err != nil {
		if !errors.Is(err, gitrepo.ErrRejected) && !errors.Is(err, gitrepo.ErrUnchanged) {
			return nil, err
		}
		// Another proposer created the branch first (perhaps with the very
		// same commit): its attempt wins.
		if ferr := r.Fetch(ctx); ferr != nil {
			return nil, exitcode.NotDecided(ferr)
		}
		won, rerr := branchRecord(ctx, r, branch, app, to)
		if rerr != nil {
			return nil, rerr
		}
		if won == nil || !won.SameAttempt(rec.Artifact, e.target) {
			return nil, fmt.Errorf("branch %s exists and does not hold this attempt: %w", branch, err)
		}
		tip, _ := r.BranchTip(ctx, branch)
		return &Proposal{Record: won, Branch: branch, Commit: tip, Existing: true, Changes: e.changes}, nil
	}
	return &Proposal{Record: rec, Branch: branch, Commit: sha, Changes: e.changes}, nil
}

func targetWithBase(t promotion.Target, base string) promotion.Target {
	t.BaseRenderedHash = base
	return t
}

// branchRecord reads the record of app/env at the tip of branch.
func branchRecord(ctx context.Context, r *gitops.Repo, branch, app, env string) (*promotion.Record, error) {
	tip, err := r.BranchTip(ctx, branch)
	if err != nil {
		return nil, err
	}
	return promotion.ReadRecord(ctx, r, tip, app, env)
}
