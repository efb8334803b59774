package chainview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// chainer judges the arrows of records read at rev of repo.
type chainer struct {
	repo *gitops.Repo
	rev  string
	now  time.Time
	// reg is the environment registry at rev: it says which environments
	// read an OCI artifact (nil: every one reads Git).
	reg *environment.Registry
	// keys are the notifier keys the policy at rev lists (nil: none).
	keys *evidence.Keys
}

// kustomizationNames are the file names kustomize recognizes (konfig's
// list), tried in order for the overlay at a desired commit.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// chain judges the nine arrows of rec, read at c.rev: required is the
// number of distinct approvers its environment requires.
func (c *chainer) chain(ctx context.Context, rec *promotion.Record, required int) (*Chain, error) {
	ch := &Chain{Record: rec, Required: max(required, 1)}
	ch.Approvals = approvalViews(rec, c.now)
	src, err := c.sourceArrows(ctx, rec, ch)
	if err != nil {
		return nil, err
	}
	desired, err := c.desiredArrow(ctx, rec)
	if err != nil {
		return nil, err
	}
	ev, evProblem, err := c.targetEvidence(ctx, rec)
	if err != nil {
		return nil, err
	}
	observed, err := c.observedArrow(ctx, rec, ev, evProblem)
	if err != nil {
		return nil, err
	}
	runtime, evCommit, err := c.runtimeArrow(ctx, rec, ev, evProblem)
	if err != nil {
		return nil, err
	}
	ch.Arrows = append([]Arrow{sourceCommitArrow(rec), digestArrow(rec)}, src...)
	ch.Arrows = append(ch.Arrows, approvalArrow(rec, ch.Required, c.now), desired, observed, runtime)
	markStopped(rec, ch.Arrows)
	if ch.Bundles, err = c.bundles(ctx, rec, ch); err != nil {
		return nil, err
	}
	if ev != nil && ev.PromotionID == rec.PromotionID {
		set, err := c.checkSet(ctx, "target", rec, ev, evidence.Path(rec.Target.Environment, rec.App, rec.PromotionID), evCommit,
			ch.Arrows[len(ch.Arrows)-1])
		if err != nil {
			return nil, err
		}
		ch.CheckSets = append(ch.CheckSets, set)
	}
	return ch, nil
}

// sourceCommitArrow: the commit of the source repository the artifact was
// built from, as propose recorded it (it is not in the GitOps repository,
// so nothing here can check more than its form).
func sourceCommitArrow(rec *promotion.Record) Arrow {
	a := Arrow{Name: "source commit", Facts: []Fact{{Label: "artifact.sourceCommit", Value: rec.Artifact.SourceCommit}}}
	if promotion.ValidRevision(rec.Artifact.SourceCommit) {
		a.Status, a.Summary = Proven, "recorded by propose: a commit of the source repository (not in the GitOps repository)"
	} else {
		a.Status, a.Summary = Broken, fmt.Sprintf("artifact.sourceCommit %q is not a full commit id", rec.Artifact.SourceCommit)
	}
	return a
}

// digestArrow: the image digest the record promotes (the record's schema
// and Validate refuse an image not pinned to it).
func digestArrow(rec *promotion.Record) Arrow {
	return Arrow{Name: "image digest", Status: Proven, Summary: "the record pins the image by digest; the tag is informative only",
		Facts: []Fact{{Label: "artifact.digest", Value: rec.Artifact.Digest}, {Label: "artifact.image", Value: rec.Artifact.Image}}}
}

// sourceArrows are the three arrows of the acceptance that verified the
// artifact: the source environment's (or, for a rollback, the target's own
// earlier) desired commit, observed revision and runtime evidence.
func (c *chainer) sourceArrows(ctx context.Context, rec *promotion.Record, ch *Chain) ([]Arrow, error) {
	v := rec.VerifiedIn
	env := "source"
	if v != nil {
		env = v.Environment
		ch.Source, ch.Rollback = v.Environment, v.IsPriorAcceptance()
		if ch.Rollback {
			env += " prior" // the target's own earlier acceptance
		}
	}
	arrows := []Arrow{{Name: env + " desired commit"}, {Name: env + " observed revision"}, {Name: env + " runtime evidence"}}
	if v == nil {
		for i := range arrows {
			arrows[i].Status, arrows[i].Summary = Pending, fmt.Sprintf("not verified yet (state %s)", rec.State)
		}
		return arrows, nil
	}
	if v.IsCandidacy() {
		err := c.candidacyArrows(ctx, rec, arrows)
		return arrows, err
	}
	if v.IsAdoption() {
		return adoptionArrows(rec), nil
	}
	var err error
	if v.IsPriorAcceptance() {
		arrows[2], err = c.priorEvidence(ctx, arrows[2].Name, rec)
	} else {
		arrows[2], err = c.sourceEvidence(ctx, arrows[2].Name, rec, ch)
	}
	if err != nil {
		return nil, err
	}
	if c.oci(v.Environment) || promotion.ValidOCIRevision(v.DesiredRevision) {
		arrows[0].Name = env + " desired artifact"
		err = c.sourceArtifact(ctx, rec, arrows)
		return arrows, err
	}
	if arrows[0], err = c.inHistory(ctx, arrows[0].Name, "verifiedIn.desiredRevision", v.DesiredRevision); err != nil {
		return nil, err
	}
	arrows[1], err = c.relation(ctx, arrows[1].Name, v.DesiredRevision, v.ObservedRevision, false)
	return arrows, err
}

// candidacyArrows judges the three source arrows of a record VERIFIED by
// its candidacy (promote candidate, then promote verify, in a first
// environment): no environment ran the artifact before, its supply-chain
// evidence verifies it. They come from the gates' own checks, as far as
// Git answers them: gate.CandidacyClaim (the record is the candidacy of
// its artifact, in a first environment of the registry at rev) and
// gate.SealedInGit (its evidence is what the candidate commit sealed).
// The bundles were re-verified against the trust policy by promote verify
// and are by the PR gate (gate.SealedCandidacy, gate.Reverify): that needs
// the registry, which the view never reads, so the third arrow rests on
// the sealed record and says so.
func (c *chainer) candidacyArrows(ctx context.Context, rec *promotion.Record, arrows []Arrow) error {
	ev := rec.Artifact.Evidence
	env := rec.Target.Environment
	arrows[0].Name, arrows[1].Name, arrows[2].Name = env+" candidacy", env+" sealed evidence", env+" supply-chain evidence"
	arrows[0].Facts = []Fact{{Label: "verifiedIn.kind", Value: string(rec.VerifiedIn.Kind)},
		{Label: "artifact.evidence.candidacy", Value: ev.Candidacy}, {Label: "artifact.evidence.environment", Value: ev.Environment}}
	for _, it := range ev.Items {
		v := it.Digest
		if it.Signer != "" {
			v += " (signer " + it.Signer + ")"
		}
		arrows[2].Facts = append(arrows[2].Facts, Fact{Label: orDash(it.Kind), Value: v})
	}
	if ev.Manifest != "" {
		arrows[1].Facts = []Fact{{Label: "artifact.evidence.manifest", Value: ev.Manifest}}
	}
	why, err := gateRefusal(gate.CandidacyClaim(ctx, c.repo, c.rev, rec))
	if err != nil {
		return fmt.Errorf("judging the candidacy of %s: %w", rec.PromotionID, err)
	}
	if why != "" {
		for i := range arrows {
			arrows[i].Status, arrows[i].Summary = Broken, why
		}
		return nil
	}
	arrows[0].Status, arrows[0].Summary = Proven, fmt.Sprintf("%s is where CI's artifact entered the chain, in %s, a first environment of %s",
		rec.PromotionID, env, promotion.PolicyFile)
	why, err = gateRefusal(gate.SealedInGit(ctx, c.repo, c.rev, rec))
	if err != nil {
		return fmt.Errorf("judging the sealed evidence of %s: %w", rec.PromotionID, err)
	}
	if why != "" {
		arrows[1].Status, arrows[1].Summary = Broken, why
		arrows[2].Status, arrows[2].Summary = Broken, "the evidence is not what its candidacy sealed"
		return nil
	}
	arrows[1].Status, arrows[1].Summary = Proven, "the record's evidence is what the candidate commit's message sealed (Evidence lines)"
	arrows[2].Status = Proven
	arrows[2].Summary = fmt.Sprintf("%d bundles, verified against %s's trust policy by promote verify (not fetched again here: "+
		"the view reads no registry)", len(ev.Items), env)
	return nil
}

// gateRefusal is refusal, saying a refusal's cause too (a gate's refusal
// may keep its reason in Err, as gate.FirstEnvironment does).
func gateRefusal(err error) (string, error) {
	why, err2 := refusal(err)
	var re *exitcode.Refusal
	if why != "" && errors.As(err, &re) && re.Err != nil {
		why += ": " + re.Err.Error()
	}
	return why, err2
}

// adoptionArrows are the source arrows of an adopted baseline (throughline
// adopt): it cites no earlier environment, and the gates accept it (and
// take it as a rollback target) by its own live verification only, the
// target's desired, observed and runtime arrows. Nothing before it is
// claimed, so nothing before it can be broken.
func adoptionArrows(rec *promotion.Record) []Arrow {
	by, at := "", ""
	if h, ok := rec.Entered(promotion.Verified); ok {
		by, at = h.By, h.At.UTC().Format(time.RFC3339)
	}
	facts := []Fact{{Label: "verifiedIn.kind", Value: string(promotion.KindAdoption)}, {Label: "adopted by", Value: orDash(by)},
		{Label: "adopted at", Value: orDash(at)}}
	why := fmt.Sprintf("adopted baseline: %s ran this digest when throughline was installed (throughline adopt); "+
		"it cites no earlier environment, and only its own live verification below accepts it", rec.Target.Environment)
	return []Arrow{
		{Name: "adopted baseline", Status: Proven, Summary: why, Facts: facts},
		{Name: "no source environment", Status: Proven, Summary: "adopted: no source environment ran it through throughline"},
		{Name: "no source evidence", Status: Proven, Summary: "adopted: the evidence is the target's own, below"},
	}
}

// sourceArtifact judges the desired and observed arrows (arrows[0],
// arrows[1]) of a VERIFIED claim whose environment reads an OCI artifact:
// revisions of the registry's kind, the observed digest the desired one,
// and the commit the artifact was built from (the evidence's
// desiredCommit) in the history of rev. An artifact digest has no
// history: the claim rests on the evidence, arrows[2].
func (c *chainer) sourceArtifact(ctx context.Context, rec *promotion.Record, arrows []Arrow) error {
	v := rec.VerifiedIn
	d, o := v.DesiredRevision, v.ObservedRevision
	arrows[0].Facts = []Fact{revisionFact("verifiedIn.desiredRevision", d)}
	arrows[1].Facts = []Fact{revisionFact("desired", d), revisionFact("observed", o)}
	why := c.kindMismatch("verifiedIn.desiredRevision", d, v.Environment)
	if why == "" {
		why = c.kindMismatch("verifiedIn.observedRevision", o, v.Environment)
	}
	if why == "" {
		pair := &evidence.Record{DesiredRevision: d, ObservedRevision: o}
		var err error
		if why, err = pair.CheckRevisions(ctx, c.repo.IsAncestor); err != nil {
			return err
		}
	}
	if why == "" && arrows[2].Status != Proven {
		why = "the digests rest on the runtime evidence, which does not prove them: " + arrows[2].Summary
	}
	if why != "" {
		for i := range 2 {
			arrows[i].Status, arrows[i].Summary = Broken, why
		}
		return nil
	}
	file, at := v.RuntimeEvidence, c.rev
	switch {
	case v.IsPriorAcceptance():
		file, at = v.PriorAcceptance.Evidence, v.PriorAcceptance.Commit
	case v.EvidenceCommit != "":
		at = v.EvidenceCommit
	}
	ev, found, err := ledger.ReadEvidence(ctx, c.repo, at, file, rec.App, v.Environment, c.keys)
	if why, err := refusal(err); err != nil || why != "" || !found {
		for i := range 2 {
			arrows[i].Status, arrows[i].Summary = Broken, fmt.Sprintf("%s at %s cannot be read: %s", file, short(at), orDash(why))
		}
		return err
	}
	in, err := c.inHistory(ctx, arrows[0].Name, "evidence desiredCommit", ev.DesiredCommit)
	if err != nil {
		return err
	}
	arrows[0].Facts, arrows[0].Status = append(arrows[0].Facts, in.Facts...), in.Status
	arrows[0].Summary = fmt.Sprintf("the artifact %s, built from %s: %s", short(d), short(ev.DesiredCommit), in.Summary)
	arrows[1].Status = Proven
	arrows[1].Summary = fmt.Sprintf("the controller pulled the desired artifact, as %s says", v.RuntimeEvidence)
	return nil
}

// inHistory proves a commit the record names is in the history of rev.
func (c *chainer) inHistory(ctx context.Context, name, field, commit string) (Arrow, error) {
	a := Arrow{Name: name, Facts: []Fact{{Label: field, Value: commit, Commit: true}}}
	if !promotion.ValidRevision(commit) {
		a.Status, a.Summary = Broken, fmt.Sprintf("%s %q is not a full commit id", field, commit)
		return a, nil
	}
	ok, err := c.repo.IsAncestor(ctx, commit, c.rev)
	if err != nil {
		return a, err
	}
	if !ok {
		a.Status, a.Summary = Broken, fmt.Sprintf("%s is not a commit in the history of %s", short(commit), short(c.rev))
		return a, nil
	}
	a.Status, a.Summary = Proven, fmt.Sprintf("%s is in the history of %s", short(commit), short(c.rev))
	return a, nil
}

// relation judges an observed revision against the desired one by the
// notifier's rule (evidence.Relate): the desired commit or a later commit
// of the branch; waiting says an earlier one is still pending.
func (c *chainer) relation(ctx context.Context, name, desired, observed string, waiting bool) (Arrow, error) {
	a := Arrow{Name: name, Facts: []Fact{{Label: "desired", Value: desired, Commit: true}, {Label: "observed", Value: observed, Commit: true}}}
	if observed == "" {
		a.Status, a.Summary, a.Facts = Pending, "no revision observed yet", a.Facts[:1]
		return a, nil
	}
	if !promotion.ValidRevision(observed) || !promotion.ValidRevision(desired) {
		a.Status, a.Summary = Broken, fmt.Sprintf("observed %q or desired %q is not a full commit id", observed, desired)
		return a, nil
	}
	// Equal text proves nothing about commits that do not exist: the
	// observed revision must be a commit of the history read.
	in, err := c.repo.IsAncestor(ctx, observed, c.rev)
	if err != nil {
		return a, err
	}
	if !in {
		a.Status, a.Summary = Broken, fmt.Sprintf("observed %s is not a commit in the history of %s", short(observed), short(c.rev))
		return a, nil
	}
	rel, err := evidence.Relate(ctx, c.repo.IsAncestor, desired, observed)
	if err != nil {
		return a, err
	}
	switch rel {
	case evidence.Desired:
		a.Status, a.Summary = Proven, "the controller observed the desired commit"
	case evidence.Later:
		a.Status, a.Summary = Proven, "the controller observed a later commit of the branch (it counts only when it renders the approved objects: "+
			"see the runtime evidence)"
	case evidence.Earlier:
		a.Status, a.Summary = Broken, fmt.Sprintf("observed %s is an ancestor of the desired %s: the controller has not caught up", short(observed),
			short(desired))
		if waiting {
			a.Status = Pending
		}
	default:
		a.Status, a.Summary = Broken, fmt.Sprintf("observed %s does not descend from the desired %s", short(observed), short(desired))
	}
	return a, nil
}

// sourceEvidence proves a VERIFIED claim as the PR gate does
// (ledger.ReadSourceEvidence), read at the claim's evidence commit (which
// must be in the history of rev), or at rev for a claim without one.
// The runtime checks of the evidence go to ch.CheckSets.
func (c *chainer) sourceEvidence(ctx context.Context, name string, rec *promotion.Record, ch *Chain) (Arrow, error) {
	v := rec.VerifiedIn
	a := Arrow{Name: name, Facts: []Fact{{Label: "verifiedIn.runtimeEvidence", Value: v.RuntimeEvidence}}}
	at := c.rev
	if v.EvidenceCommit != "" {
		a.Facts = append(a.Facts, Fact{Label: "verifiedIn.evidenceCommit", Value: v.EvidenceCommit, Commit: true})
		in, err := c.inHistory(ctx, name, "verifiedIn.evidenceCommit", v.EvidenceCommit)
		if err != nil || in.Status != Proven {
			in.Facts = a.Facts
			return in, err
		}
		at = v.EvidenceCommit
	}
	a.Pods = c.podsAt(ctx, at, v.RuntimeEvidence, rec.App, v.Environment)
	// Age is shown, not judged: evidenceMaxAge is a rule for the next
	// promotion, not for the proof of this one (a zero now never exceeds it).
	src, err := ledger.ReadSourceEvidence(ctx, c.repo, at, rec.App, v.Environment, rec.Artifact.Digest, time.Time{})
	if why, err := refusal(err); err != nil || why != "" {
		a.Status, a.Summary = Broken, why
		return a, err
	}
	proven := src.VerifiedIn()
	if v.EvidenceCommit == "" {
		proven.EvidenceCommit = ""
	}
	if *v != proven {
		a.Status, a.Summary = Broken, fmt.Sprintf("verifiedIn is not what the evidence in Git proves (%s at %s: desired %s, observed %s, "+
			"rendered %s)", src.Path, short(src.Commit), short(proven.DesiredRevision), short(proven.ObservedRevision), proven.RenderedHash)
		return a, nil
	}
	a.Pods = src.Evidence.Pods
	a.Facts = append(a.Facts, Fact{Label: "accepted at", Value: src.Commit, Commit: true},
		Fact{Label: "evidence time", Value: src.Evidence.Time.UTC().Format(time.RFC3339)})
	a.Status, a.Summary = Proven, fmt.Sprintf("%s says ACCEPTED for this digest and these revisions, every Pod of it matches", src.Path)
	set, err := c.checkSet(ctx, "source", src.Record, src.Evidence, src.Path, src.Commit, a)
	ch.CheckSets = append(ch.CheckSets, set)
	return a, err
}

// priorEvidence proves a rollback's claim of a prior acceptance as the PR
// gate does (ledger.CheckPrior).
func (c *chainer) priorEvidence(ctx context.Context, name string, rec *promotion.Record) (Arrow, error) {
	p := rec.VerifiedIn.PriorAcceptance
	a := Arrow{Name: name, Facts: []Fact{{Label: "priorAcceptance.promotionId", Value: p.PromotionID},
		{Label: "priorAcceptance.evidence", Value: p.Evidence}, {Label: "priorAcceptance.commit", Value: p.Commit, Commit: true}}}
	a.Pods = c.podsAt(ctx, p.Commit, p.Evidence, rec.App, rec.Target.Environment)
	why, err := refusal(ledger.CheckPrior(ctx, c.repo, c.rev, rec))
	if err != nil || why != "" {
		a.Status, a.Summary = Broken, why
		return a, err
	}
	a.Status, a.Summary = Proven, fmt.Sprintf("a rollback: %s accepted this digest in %s before, with evidence Git still holds",
		p.PromotionID, rec.Target.Environment)
	return a, nil
}

// refusal turns a gate's answer into the reason it does not prove ("" when
// it does): a refusal or invalid input is a reason, any other error an
// error.
func refusal(err error) (string, error) {
	var re *exitcode.Refusal
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &re):
		return re.Reason, nil
	case exitcode.Code(err) == exitcode.Invalid:
		return err.Error(), nil
	}
	return "", err
}

// podsAt reads the Pods of an evidence file for display (nil when it
// cannot be read: the verdict says why).
func (c *chainer) podsAt(ctx context.Context, rev, file, app, env string) []evidence.Pod {
	ev, found, err := ledger.ReadEvidence(ctx, c.repo, rev, file, app, env, c.keys)
	if err != nil || !found {
		return nil
	}
	return ev.Pods
}

// approvalViews are rec's approvals (the summary alone when the
// environment has no approvers list) judged at now, or at the merge once
// merged.
func approvalViews(rec *promotion.Record, now time.Time) []ApprovalView {
	list := rec.Approvals
	if len(list) == 0 && rec.Approval != nil {
		list = []promotion.Approval{*rec.Approval}
	}
	// Once merged (RECONCILING), an approval has done its work: its
	// expiry mattered at the merge, which the PR arrow judges.
	for _, t := range rec.History {
		if t.State == promotion.Reconciling {
			now = t.At
		}
	}
	var out []ApprovalView
	for _, a := range list {
		out = append(out, ApprovalView{Approval: a, Expired: !now.Before(a.ExpiresAt)})
	}
	return out
}

// approvalArrow: the promotion PR, approved by enough distinct approvers,
// and merged (RECONCILING) before the approval expired.
func approvalArrow(rec *promotion.Record, required int, now time.Time) Arrow {
	a := Arrow{Name: rec.Target.Environment + " promotion PR"}
	n := len(approvalViews(rec, now))
	a.Facts = []Fact{{Label: "approvals", Value: fmt.Sprintf("%d of %d required", n, required)}}
	// The freeze overrides as the record claims them (promote check and
	// reconcile verify their signatures and binding).
	for i, o := range rec.Overrides {
		state := "until"
		if !now.Before(o.ExpiresAt) {
			state = "expired at"
		}
		a.Facts = append(a.Facts, Fact{Label: fmt.Sprintf("overrides[%d]", i), Value: fmt.Sprintf("freeze override by %s %s %s: %s", o.Approver, state,
			o.ExpiresAt.UTC().Format(time.RFC3339), o.Reason)})
	}
	if rec.Approval == nil {
		a.Status, a.Summary = Pending, fmt.Sprintf("not approved yet (state %s, %d of %d approvals)", rec.State, n, required)
		return a
	}
	ap := rec.Approval
	a.Facts = append(a.Facts, Fact{Label: "approval.approver", Value: ap.Approver}, Fact{Label: "approval.inputHash", Value: ap.InputHash},
		Fact{Label: "approval.expiresAt", Value: ap.ExpiresAt.UTC().Format(time.RFC3339)})
	used, merged := now, false
	for _, t := range rec.History {
		if t.State == promotion.Reconciling {
			used, merged = t.At, true
		}
	}
	switch {
	case n < required:
		a.Status, a.Summary = Broken, fmt.Sprintf("%d distinct approvers signed, %s requires %d", n, rec.Target.Environment, required)
	case !used.Before(ap.ExpiresAt) && merged:
		a.Status, a.Summary = Broken, fmt.Sprintf("merged at %s, after the approval expired at %s", used.UTC().Format(time.RFC3339),
			ap.ExpiresAt.UTC().Format(time.RFC3339))
	case !used.Before(ap.ExpiresAt):
		a.Status, a.Summary = Broken, fmt.Sprintf("the approval expired at %s: approve again", ap.ExpiresAt.UTC().Format(time.RFC3339))
	case merged:
		a.Status, a.Summary = Proven, fmt.Sprintf("approved by %s, bound to the input hash, merged before it expired", ap.Approver)
	default:
		a.Status, a.Summary = Pending, fmt.Sprintf("approved by %s until %s, not merged yet", ap.Approver, ap.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return a
}

// desiredArrow: the target's desired commit is in the history of rev and
// its overlay pins the digest there. In an OCI environment the desired
// revision is the artifact's digest and the commit judged is the one it was
// built from (reconciling.desiredCommit); a revision of the other kind than
// the registry gives the environment is broken.
func (c *chainer) desiredArrow(ctx context.Context, rec *promotion.Record) (Arrow, error) {
	env := rec.Target.Environment
	name := env + " desired commit"
	if c.oci(env) {
		name = env + " desired artifact"
	}
	if rec.Reconciling == nil {
		return Arrow{Name: name, Status: Pending, Summary: fmt.Sprintf("not merged yet (state %s)", rec.State)}, nil
	}
	d := rec.Reconciling.DesiredRevision
	if why := c.kindMismatch("reconciling.desiredRevision", d, env); why != "" {
		return Arrow{Name: name, Status: Broken, Summary: why, Facts: []Fact{revisionFact("reconciling.desiredRevision", d)}}, nil
	}
	commit, field := d, "reconciling.desiredRevision"
	if promotion.ValidOCIRevision(d) {
		commit, field = rec.Reconciling.DesiredCommit, "reconciling.desiredCommit"
	}
	a, err := c.inHistory(ctx, name, field, commit)
	if commit != d {
		a.Facts = append([]Fact{revisionFact("reconciling.desiredRevision", d)}, a.Facts...)
	}
	if err != nil || a.Status != Proven {
		return a, err
	}
	file, pins, err := c.pins(ctx, commit, rec.Target.Path, rec.Artifact.Digest)
	if err != nil {
		return a, err
	}
	a.Facts = append(a.Facts, Fact{Label: "overlay", Value: file})
	if !pins {
		a.Status, a.Summary = Broken, fmt.Sprintf("%s at %s does not pin %s", file, short(commit), rec.Artifact.Digest)
		return a, nil
	}
	a.Summary = fmt.Sprintf("%s, in the history of %s, where %s pins the digest", short(d), short(c.rev), file)
	if commit != d {
		a.Summary = fmt.Sprintf("the artifact %s, built from %s, in the history of %s, where %s pins the digest", short(d), short(commit),
			short(c.rev), file)
	}
	return a, nil
}

// oci reports whether env reads an OCI artifact by the registry at rev.
func (c *chainer) oci(env string) bool {
	return c.reg != nil && c.reg.SourceKindOf(env) == environment.SourceOCI
}

// kindMismatch says why rev, the record's field, is not of the kind of
// source the registry gives env ("" when it is), as the gates say it: a
// digest for an OCI environment, a commit id for a Git one.
func (c *chainer) kindMismatch(field, rev, env string) string {
	oci := c.oci(env)
	if oci == promotion.ValidOCIRevision(rev) {
		return ""
	}
	kind := map[bool]string{true: "an OCI artifact", false: "Git"}[oci]
	return fmt.Sprintf("%s %s is %s, but environment %s's source is %s in %s", field, rev, promotion.RevisionKind(rev), env, kind,
		promotion.PolicyFile)
}

// revisionFact shows a revision: a commit links to it, a digest does not.
func revisionFact(label, rev string) Fact {
	return Fact{Label: label, Value: rev, Commit: !promotion.ValidOCIRevision(rev)}
}

// pins reports whether the kustomization of the overlay dir at rev names
// digest, and which file was read.
func (c *chainer) pins(ctx context.Context, rev, dir, digest string) (string, bool, error) {
	for _, n := range kustomizationNames {
		file := path.Join(dir, n)
		data, err := c.repo.ReadFile(ctx, rev, file)
		if errors.Is(err, gitrepo.ErrNotFound) {
			continue
		}
		if err != nil {
			return file, false, fmt.Errorf("reading %s at %s: %w", file, rev, err)
		}
		return file, bytes.Contains(data, []byte(digest)), nil
	}
	return path.Join(dir, kustomizationNames[0]), false, nil
}

// targetEvidence reads the notifier's evidence file of rec at rev (nil
// when there is none; problem says why one is unusable).
func (c *chainer) targetEvidence(ctx context.Context, rec *promotion.Record) (*evidence.Record, string, error) {
	file := evidence.Path(rec.Target.Environment, rec.App, rec.PromotionID)
	ev, found, err := ledger.ReadEvidence(ctx, c.repo, c.rev, file, rec.App, rec.Target.Environment, c.keys)
	if why, err := refusal(err); err != nil || why != "" {
		return nil, why, err
	}
	if !found {
		return nil, "", nil
	}
	return ev, "", nil
}

// observedArrow: the revision the target's controller observed, by the
// notifier's rule, from the record (ACCEPTED) or the evidence (HALTED).
// problem says why the evidence file is unusable.
func (c *chainer) observedArrow(ctx context.Context, rec *promotion.Record, ev *evidence.Record, problem string) (Arrow, error) {
	env := rec.Target.Environment
	name := env + " observed revision"
	if rec.Reconciling == nil {
		return Arrow{Name: name, Status: Pending, Summary: "no desired commit yet"}, nil
	}
	if ev != nil && ev.PromotionID != rec.PromotionID {
		ev = nil
	}
	observed := ""
	switch {
	case rec.Accepted != nil:
		observed = rec.Accepted.ObservedRevision
	case ev != nil:
		observed = ev.ObservedRevision
	}
	d := rec.Reconciling.DesiredRevision
	if why := c.kindMismatch("reconciling.desiredRevision", d, env); why != "" {
		return Arrow{Name: name, Status: Broken, Summary: why, Facts: []Fact{revisionFact("desired", d), revisionFact("observed", observed)}}, nil
	}
	if promotion.ValidOCIRevision(d) {
		return c.observedArtifact(ctx, name, rec, observed, ev, problem)
	}
	return c.relation(ctx, name, d, observed, rec.State == promotion.Reconciling)
}

// observedArtifact judges the artifact an OCI environment's controller
// pulled: proven only when it is the desired digest and the notifier's
// evidence of the attempt says so (another digest is another artifact,
// evidence.Record.CheckRevisions; an artifact naming another commit than
// the desired one is halted by the notifier as a wrong source).
func (c *chainer) observedArtifact(ctx context.Context, name string, rec *promotion.Record, observed string, ev *evidence.Record,
	problem string) (Arrow, error) {
	want := rec.Reconciling
	a := Arrow{Name: name, Facts: []Fact{revisionFact("desired", want.DesiredRevision),
		{Label: "desiredCommit", Value: want.DesiredCommit, Commit: true}}}
	if observed == "" {
		a.Status, a.Summary = Pending, "no artifact observed yet"
		return a, nil
	}
	a.Facts = append(a.Facts, revisionFact("observed", observed))
	if ev != nil && ev.ObservedCommit != "" {
		a.Facts = append(a.Facts, Fact{Label: "evidence observedCommit", Value: ev.ObservedCommit, Commit: true})
	}
	if why := c.kindMismatch("observed", observed, rec.Target.Environment); why != "" {
		a.Status, a.Summary = Broken, why
		return a, nil
	}
	pair := &evidence.Record{DesiredRevision: want.DesiredRevision, DesiredCommit: want.DesiredCommit, ObservedRevision: observed}
	why, err := pair.CheckRevisions(ctx, c.repo.IsAncestor)
	if err != nil {
		return a, err
	}
	file := evidence.Path(rec.Target.Environment, rec.App, rec.PromotionID)
	switch {
	case why != "":
	case problem != "":
		why = problem
	case ev == nil:
		why = fmt.Sprintf("the record says the desired artifact was observed, but there is no evidence %s", file)
	case ev.DesiredRevision != want.DesiredRevision || ev.DesiredCommit != want.DesiredCommit || ev.ObservedRevision != observed:
		why = fmt.Sprintf("%s records desired %s (built from %s) and observed %s, not the record's revisions", file, ev.DesiredRevision,
			orDash(ev.DesiredCommit), ev.ObservedRevision)
	case ev.ObservedCommit != "" && ev.ObservedCommit != want.DesiredCommit:
		why = fmt.Sprintf("the observed artifact names commit %s, not the desired %s: another source", ev.ObservedCommit, want.DesiredCommit)
	}
	if why != "" {
		a.Status, a.Summary = Broken, why
		return a, nil
	}
	a.Status, a.Summary = Proven, fmt.Sprintf("the controller pulled the desired artifact (built from %s), as %s says", short(want.DesiredCommit), file)
	return a, nil
}

// runtimeArrow: the target's runtime evidence, proven as the next
// promotion's gate would prove it (ledger.ReadSourceEvidence at rev), and
// the commit the evidence is read at (where the record became ACCEPTED,
// else rev).
func (c *chainer) runtimeArrow(ctx context.Context, rec *promotion.Record, ev *evidence.Record, problem string) (Arrow, string, error) {
	env := rec.Target.Environment
	file := evidence.Path(env, rec.App, rec.PromotionID)
	a := Arrow{Name: env + " runtime evidence", Facts: []Fact{{Label: "evidence file", Value: file}}}
	if ev != nil {
		a.Pods = ev.Pods
		a.Facts = append(a.Facts, Fact{Label: "decision", Value: string(ev.Decision)}, Fact{Label: "reported by", Value: reporter(ev.ReportedBy)},
			Fact{Label: "evidence time", Value: ev.Time.UTC().Format(time.RFC3339)})
	}
	switch {
	case rec.State == promotion.Accepted:
		src, err := ledger.ReadSourceEvidence(ctx, c.repo, c.rev, rec.App, env, rec.Artifact.Digest, time.Time{})
		why, err := refusal(err)
		if err != nil {
			return a, "", err
		}
		if why != "" {
			a.Status, a.Summary = Broken, why
			return a, c.rev, nil
		}
		a.Status, a.Summary = Proven, fmt.Sprintf("%s says ACCEPTED for this attempt, digest and revisions; every Pod of the digest matches", file)
		return a, src.Commit, nil
	case problem != "":
		a.Status, a.Summary = Broken, problem
	case ev != nil && ev.Decision == promotion.Halted:
		a.Status, a.Summary = Broken, fmt.Sprintf("HALTED (%s): %s", orDash(ev.Class), ev.Reason)
	default:
		a.Status, a.Summary = Pending, fmt.Sprintf("no decision yet (state %s)", rec.State)
	}
	return a, c.rev, nil
}

// markStopped marks the first pending arrow of a HALTED or REJECTED
// record broken with its reason, when no arrow says why already.
func markStopped(rec *promotion.Record, arrows []Arrow) {
	if rec.State != promotion.Halted && rec.State != promotion.Rejected {
		return
	}
	for _, a := range arrows {
		if a.Status == Broken {
			return
		}
	}
	for i := range arrows {
		if arrows[i].Status == Pending {
			arrows[i].Status = Broken
			arrows[i].Summary = fmt.Sprintf("the record is %s here: %s", rec.State, rec.Reason)
			return
		}
	}
}

func reporter(r evidence.Reporter) string {
	s := r.Source
	if r.Object != "" {
		s += " " + r.Object
	}
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(sha string) string {
	if promotion.ValidOCIRevision(sha) {
		return sha[:len("sha256:")+12]
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
