package ledger

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// AnnotationIrreversible marks a workload whose artifact ran a data
// migration that the previous artifact cannot read back. A rollback away
// from a workload carrying it with the value "true" (on the object or its
// pod template) needs an explicit acknowledgement.
const AnnotationIrreversible = "throughline.dev/irreversible-migration"

// Previous is the --to value that picks the newest accepted digest other
// than the one currently desired.
const Previous = "previous"

// Accepted is one artifact the environment accepted, as Git proves it: the
// record ACCEPTED for PromotionID and the notifier's evidence file saying
// ACCEPTED for the same app, environment, digest and revision, both in the
// tree of Commit.
type Accepted struct {
	Artifact         promotion.Artifact `json:"artifact"`
	PromotionID      string             `json:"promotionId"`
	Attempt          int                `json:"attempt"`
	Commit           string             `json:"commit"` // the commit whose record says ACCEPTED and holds the evidence
	DesiredRevision  string             `json:"desiredRevision"`
	ObservedRevision string             `json:"observedRevision"`
	// RenderedHash is the target as rendered by that attempt.
	RenderedHash string `json:"renderedHash"`
	// Evidence is the evidence file, evidence/<env>/<app>/<promotionId>.json.
	Evidence string `json:"evidence"`
}

// Prior is the claim a rollback to a makes in its record's verifiedIn.
func (a Accepted) Prior() promotion.PriorAcceptance {
	return promotion.PriorAcceptance{PromotionID: a.PromotionID, Evidence: a.Evidence, Commit: a.Commit}
}

// Unproven is an acceptance Git claims but does not prove: a record
// ACCEPTED without its evidence file, or evidence that disagrees with the
// record (another digest, revision or decision), or evidence saying
// ACCEPTED for an attempt whose record never was. It is never a rollback
// target.
type Unproven struct {
	Digest      string `json:"digest,omitempty"`
	PromotionID string `json:"promotionId"`
	Commit      string `json:"commit"`
	Reason      string `json:"reason"`
}

// String is the unproven acceptance in one line.
func (u Unproven) String() string {
	if u.PromotionID == "" {
		return fmt.Sprintf("a record at %s: %s", gitrepo.Short(u.Commit), u.Reason)
	}
	if u.Digest == "" { // a file that cannot be read says no digest
		return fmt.Sprintf("%s at %s: %s", u.PromotionID, gitrepo.Short(u.Commit), u.Reason)
	}
	return fmt.Sprintf("%s (%s) at %s: %s", u.PromotionID, u.Digest, gitrepo.Short(u.Commit), u.Reason)
}

// Log is what Git says app accepted in env.
type Log struct {
	// Accepted lists, newest first, one entry per digest: its newest
	// proven acceptance.
	Accepted []Accepted
	// Unproven lists the acceptances claimed without proof, newest first.
	Unproven []Unproven
	// Attempts is the highest attempt number seen per digest.
	Attempts map[string]int
}

// Rules of the rollback refusals (exitcode.Refusal.Rule).
const (
	// RuleTarget refuses a rollback target the environment never proved.
	RuleTarget = "rollback-target"
	// RulePriorAcceptance refuses a prior-acceptance claim Git does not back.
	RulePriorAcceptance = "prior-acceptance"
)

// History reads, in the history of rev, every version of the record of app
// in env and, where one says ACCEPTED, the evidence file it names in the
// same commit, and every evidence file of app in env at rev. A digest
// counts as accepted only where the record and the evidence agree, and the
// evidence at rev still says so; the rest is reported in Unproven. A
// version of the record that cannot be used (it does not parse, or names
// another app or environment) is listed in Unproven with the reason: it
// never counts as accepted.
func History(ctx context.Context, repo *gitops.Repo, rev, app, env string) (*Log, error) {
	return (&Reader{Repo: repo}).History(ctx, rev, app, env)
}

// History is History through rd (its remembered versions).
func (rd *Reader) History(ctx context.Context, rev, app, env string) (*Log, error) {
	repo := rd.Repo
	versions, err := rd.Versions(ctx, rev, app, env)
	if err != nil {
		return nil, err
	}
	// The evidence files at rev, read once: each proven acceptance's file
	// must still say so there, and a file saying ACCEPTED for an attempt
	// whose record never did is reported.
	keys, err := EvidenceKeysAt(ctx, repo, rev)
	if err != nil {
		return nil, err
	}
	names, tip, err := evidenceAt(ctx, repo, rev, app, env, keys)
	if err != nil {
		return nil, err
	}
	log := &Log{Attempts: map[string]int{}}
	seen := map[string]bool{}     // digests with a proven acceptance
	claimed := map[string]bool{}  // promotionIds whose record said ACCEPTED
	reported := map[string]bool{} // unproven promotionIds already listed
	for _, v := range versions {
		c, rec := v.Commit, v.rec
		if v.Invalid != nil {
			log.Unproven = append(log.Unproven, Unproven{Commit: c, Reason: fmt.Sprintf("cannot be used, so never counts as accepted: %v", v.Invalid)})
			continue
		}
		if rec == nil {
			continue // deleted in this commit
		}
		d := rec.Artifact.Digest
		log.Attempts[d] = max(log.Attempts[d], rec.Attempt)
		if rec.State != promotion.Accepted {
			continue
		}
		claimed[rec.PromotionID] = true
		a, why, err := prove(ctx, repo, c, rec, keys)
		if err != nil {
			return nil, err
		}
		if why == "" {
			// The evidence must still say so where the rollback starts.
			f, ok := tip[a.Evidence]
			why = changedSince(rev, a, f, ok)
		}
		if why != "" {
			if !reported[rec.PromotionID] {
				reported[rec.PromotionID] = true
				log.Unproven = append(log.Unproven, Unproven{Digest: d, PromotionID: rec.PromotionID, Commit: c, Reason: why})
			}
			continue
		}
		if !seen[d] {
			seen[d] = true
			log.Accepted = append(log.Accepted, *a)
		}
	}
	log.Unproven = append(log.Unproven, unclaimed(rev, promotion.RecordPath(app, env), names, tip, claimed)...)
	return log, nil
}

// unclaimed lists the evidence files at rev (names, parsed in tip) that do
// not parse, or say ACCEPTED for an attempt whose record (file) never did
// in the history of rev (claimed: the promotionIds whose record did).
func unclaimed(rev, file string, names []string, tip map[string]parsed, claimed map[string]bool) []Unproven {
	var out []Unproven
	for _, rel := range names {
		ev, err := tip[rel].ev, tip[rel].err
		if err != nil {
			out = append(out, Unproven{PromotionID: strings.TrimSuffix(path.Base(rel), ".json"), Commit: rev,
				Reason: unusable(rel, err)})
			continue
		}
		if ev.Decision != promotion.Accepted || claimed[ev.PromotionID] {
			continue
		}
		out = append(out, Unproven{Digest: ev.ArtifactDigest, PromotionID: ev.PromotionID, Commit: rev,
			Reason: fmt.Sprintf("%s says ACCEPTED, but %s was never ACCEPTED for %s in the history of %s", rel, file, ev.PromotionID, gitrepo.Short(rev))})
	}
	return out
}

// prove is Prove for the history: the acceptance of rec in commit when
// its evidence proves it, else why not (a file that is not signed by a
// listed key or not evidence/v1 is a reason too; an error is a failure to
// read Git).
func prove(ctx context.Context, repo *gitops.Repo, commit string, rec *promotion.Record, keys *evidence.Keys) (*Accepted, string, error) {
	_, why, err := Prove(ctx, repo, commit, rec, keys)
	if c := exitcode.Code(err); err != nil && (c == exitcode.Invalid || c == exitcode.Refused) {
		return nil, unusable(evidence.Path(rec.Target.Environment, rec.App, rec.PromotionID), err), nil
	}
	if err != nil || why != "" {
		return nil, why, err
	}
	return &Accepted{Artifact: *deepCopy(&rec.Artifact), PromotionID: rec.PromotionID, Attempt: rec.Attempt, Commit: commit,
		DesiredRevision: rec.Reconciling.DesiredRevision, ObservedRevision: rec.Accepted.ObservedRevision,
		RenderedHash: rec.Target.RenderedHash, Evidence: evidence.Path(rec.Target.Environment, rec.App, rec.PromotionID)}, "", nil
}

// unusable says why file cannot be used, naming it once (err's text
// usually starts with it).
func unusable(file string, err error) string {
	if rest, ok := strings.CutPrefix(err.Error(), file+": "); ok {
		return file + " cannot be used: " + rest
	}
	return fmt.Sprintf("%s cannot be used: %v", file, err)
}

// parsed is an evidence file as read at one commit: the record, or why it
// cannot be used (it is not signed by a listed notifier key, or does not
// parse).
type parsed struct {
	ev  *evidence.Record
	err error
}

// open reads the evidence file at rev with its signature
// (ReadEvidence): found is false when there is none; a file that cannot
// be used is parsed.err, a failure to read Git the error.
func open(ctx context.Context, repo *gitops.Repo, rev, file, env string, keys *evidence.Keys) (parsed, bool, error) {
	app := path.Base(path.Dir(file))
	ev, found, err := ReadEvidence(ctx, repo, rev, file, app, env, keys)
	if c := exitcode.Code(err); err != nil && (c == exitcode.Invalid || c == exitcode.Refused) {
		return parsed{err: err}, true, nil
	}
	return parsed{ev: ev}, found, err
}

// EvidenceKeysAt are the notifier keys of the policy at rev (EvidenceKeys).
func EvidenceKeysAt(ctx context.Context, repo *gitops.Repo, rev string) (*evidence.Keys, error) {
	pol, err := promotion.ReadPolicy(ctx, repo, rev)
	if err != nil {
		return nil, err
	}
	return EvidenceKeys(ctx, repo, rev, pol)
}

// evidenceAt reads every evidence file of app in env at rev: their paths
// in Git's order, and each parsed.
func evidenceAt(ctx context.Context, repo *gitops.Repo, rev, app, env string, keys *evidence.Keys) ([]string, map[string]parsed, error) {
	dir := path.Join(promotion.EvidenceDir, env, app)
	list, err := repo.ListTree(ctx, rev, dir)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	files := map[string]parsed{}
	for _, rel := range list {
		if path.Dir(rel) != dir || !strings.HasSuffix(rel, ".json") {
			continue // the files of dir itself, as the notifier writes them
		}
		f, _, err := open(ctx, repo, rev, rel, env, keys)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, rel)
		files[rel] = f
	}
	return names, files, nil
}

// stillSays reports why the evidence of a, read at rev, no longer says
// what it said when a was accepted ("" when it does).
func stillSays(ctx context.Context, repo *gitops.Repo, rev string, a *Accepted, env string, keys *evidence.Keys) (string, error) {
	f, found, err := open(ctx, repo, rev, a.Evidence, env, keys)
	if err != nil {
		return "", err
	}
	return changedSince(rev, a, f, found), nil
}

// changedSince reports why f, the evidence of a as it is at rev (absent
// unless present), no longer says what it said when a was accepted (""
// when it does): the file was deleted or rewritten to another decision,
// digest, attempt or revision since.
func changedSince(rev string, a *Accepted, f parsed, present bool) string {
	if !present {
		return fmt.Sprintf("%s was deleted after the acceptance at %s (it is absent at %s)", a.Evidence, gitrepo.Short(a.Commit), gitrepo.Short(rev))
	}
	if f.err != nil {
		return fmt.Sprintf("%s was changed after the acceptance at %s and cannot be used at %s: %v", a.Evidence,
			gitrepo.Short(a.Commit), gitrepo.Short(rev), f.err)
	}
	ev := f.ev
	if ev.Decision != promotion.Accepted || ev.PromotionID != a.PromotionID || ev.ArtifactDigest != a.Artifact.Digest ||
		ev.DesiredRevision != a.DesiredRevision || ev.ObservedRevision != a.ObservedRevision {
		return fmt.Sprintf("%s was changed after the acceptance at %s: at %s it says %s for %s (%s), observed %s",
			a.Evidence, gitrepo.Short(a.Commit), gitrepo.Short(rev), ev.Decision, ev.PromotionID, ev.ArtifactDigest, ev.ObservedRevision)
	}
	return ""
}

// CheckPrior checks a rollback record's claim (verifiedIn of kind
// prior-acceptance) against Git: the named commit is in the history of base
// (a claim cannot rest on a commit of the PR itself), and in its tree the
// record was ACCEPTED as the named attempt for this digest and the evidence
// file agrees, with the revisions and rendered hash the claim repeats, and
// the evidence at base still says so. A claim Git does not back is a
// *exitcode.Refusal.
func CheckPrior(ctx context.Context, repo *gitops.Repo, base string, rec *promotion.Record) error {
	v := rec.VerifiedIn
	if !v.IsPriorAcceptance() {
		return fmt.Errorf("%s: verifiedIn is not of kind %s", rec.PromotionID, promotion.KindPriorAcceptance)
	}
	p := v.PriorAcceptance
	refuse := func(format string, args ...any) error {
		return &exitcode.Refusal{Rule: RulePriorAcceptance, Reason: fmt.Sprintf("prior acceptance %s claimed by %s at %s: ", p.PromotionID,
			rec.PromotionID, gitrepo.Short(p.Commit)) + fmt.Sprintf(format, args...)}
	}
	in, err := repo.IsAncestor(ctx, p.Commit, base)
	if err != nil {
		return fmt.Errorf("checking the prior acceptance %s of %s: %w", p.PromotionID, rec.PromotionID, err)
	}
	if !in {
		return refuse("the commit is not in the history of the base %s", gitrepo.Short(base))
	}
	file := promotion.RecordPath(rec.App, rec.Target.Environment)
	prev, err := promotion.ReadRecord(ctx, repo, p.Commit, rec.App, rec.Target.Environment)
	if exitcode.Code(err) == exitcode.Invalid {
		return refuse("%s there cannot be used: %v", file, err)
	}
	if err != nil {
		return err
	}
	switch {
	case prev == nil:
		return refuse("%s does not exist there", file)
	case prev.PromotionID != p.PromotionID:
		return refuse("the record there is %s (%s), not %s: that attempt never reached ACCEPTED in that commit", prev.PromotionID, prev.State,
			p.PromotionID)
	case prev.State != promotion.Accepted:
		return refuse("the record there is %s, not ACCEPTED", prev.State)
	case prev.Artifact.Digest != rec.Artifact.Digest:
		return refuse("that attempt accepted %s, this record rolls back to %s", prev.Artifact.Digest, rec.Artifact.Digest)
	}
	keys, err := EvidenceKeysAt(ctx, repo, base)
	if err != nil {
		return err
	}
	a, why, err := prove(ctx, repo, p.Commit, prev, keys)
	if err != nil {
		return err
	}
	switch {
	case why != "":
		return refuse("%s", why)
	case a.Evidence != p.Evidence:
		return refuse("the evidence is %s, the claim names %s", a.Evidence, p.Evidence)
	case v.DesiredRevision != a.DesiredRevision || v.ObservedRevision != a.ObservedRevision:
		return refuse("verifiedIn names desired %s / observed %s, the acceptance was desired %s / observed %s", v.DesiredRevision,
			v.ObservedRevision, a.DesiredRevision, a.ObservedRevision)
	case v.RenderedHash != a.RenderedHash:
		return refuse("verifiedIn.renderedHash %s is not the accepted render %s", v.RenderedHash, a.RenderedHash)
	}
	if why, err := stillSays(ctx, repo, base, a, rec.Target.Environment, keys); err != nil {
		return err
	} else if why != "" {
		return refuse("%s", why)
	}
	return nil
}

// Pick chooses the rollback target from l: to is a digest (sha256:<hex>,
// or a unique prefix of at least 12 hex digits) or Previous; current is
// the digest desired now, which is never a rollback target. Only proven
// acceptances count; a digest that is only claimed is refused with the
// reason it is unproven.
func Pick(l *Log, to, current, env string) (Accepted, error) {
	hist := l.Accepted
	if to == Previous {
		for _, a := range hist {
			if a.Artifact.Digest != current {
				return a, nil
			}
		}
		return Accepted{}, exitcode.Refuse(RuleTarget,
			"no digest other than the current %s was ever ACCEPTED in %s with evidence: nothing to roll back to%s", current, env, unprovenNote(l.Unproven, ""))
	}
	want := to
	if !strings.HasPrefix(want, "sha256:") {
		want = "sha256:" + want
	}
	if len(want) < len("sha256:")+12 {
		return Accepted{}, exitcode.Refuse(RuleTarget, "--to %q: want a digest sha256:<hex> (at least 12 hex digits) or %q", to, Previous)
	}
	var found []Accepted
	for _, a := range hist {
		if strings.HasPrefix(a.Artifact.Digest, want) {
			found = append(found, a)
		}
	}
	switch {
	case len(found) == 0:
		return Accepted{}, exitcode.Refuse(RuleTarget,
			"%s was never ACCEPTED in %s (accepted there with evidence: %s): a rollback goes only to a digest the environment verified%s",
			to, env, digests(hist), unprovenNote(l.Unproven, want))
	case len(found) > 1:
		return Accepted{}, exitcode.Refuse(RuleTarget, "--to %s names several accepted digests (%s): give more digits", to, digests(found))
	case found[0].Artifact.Digest == current:
		return Accepted{}, exitcode.Refuse(RuleTarget, "%s is already the desired digest of %s: nothing to roll back", current, env)
	}
	return found[0], nil
}

// unprovenNote lists the unproven acceptances (of digests starting with
// prefix, when given) for a refusal message.
func unprovenNote(us []Unproven, prefix string) string {
	var s []string
	for _, u := range us {
		if prefix == "" || strings.HasPrefix(u.Digest, prefix) {
			s = append(s, u.String())
		}
	}
	if len(s) == 0 {
		return ""
	}
	return "; claimed without proof, so not counted: " + strings.Join(s, "; ")
}

func digests(as []Accepted) string {
	if len(as) == 0 {
		return "none"
	}
	var s []string
	for _, a := range as {
		s = append(s, a.Artifact.Digest)
	}
	return strings.Join(s, ", ")
}

// Irreversible lists the workloads of objs that run digest (the artifact
// being rolled back from) and carry AnnotationIrreversible "true" on the
// object or on a pod template.
func Irreversible(objs []render.Object, digest string) []string {
	var out []string
	for _, o := range objs {
		runs := false
		for _, c := range render.Containers(o) {
			if strings.HasSuffix(c.Image, "@"+digest) {
				runs = true
			}
		}
		if runs && annotated(o.Map, "") {
			out = append(out, o.ID().String())
		}
	}
	return out
}

// annotated walks metadata.annotations of the object and of every nested
// template.
func annotated(m map[string]any, at string) bool {
	if md, ok := m["metadata"].(map[string]any); ok {
		if an, ok := md["annotations"].(map[string]any); ok {
			if v, _ := an[AnnotationIrreversible].(string); strings.EqualFold(v, "true") {
				return true
			}
		}
	}
	for k, v := range m {
		if k == "metadata" || k == "status" {
			continue
		}
		if sub, ok := v.(map[string]any); ok && annotated(sub, path.Join(at, k)) {
			return true
		}
	}
	return false
}
