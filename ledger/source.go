package ledger

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
)

// RuleSourceEvidence refuses a source environment whose runtime evidence,
// read from Git, is missing or does not prove the digest.
const RuleSourceEvidence = "source-evidence"

// SourceEvidence is the source environment's acceptance of a digest as Git
// proves it: its record on the base branch and the notifier's evidence/v1
// file, read at the commit where that record became ACCEPTED.
type SourceEvidence struct {
	Environment string
	Record      *promotion.Record
	Evidence    *evidence.Record
	// Path is the evidence file, Commit the commit it was read at.
	Path, Commit string
}

// VerifiedIn is the VERIFIED gate's claim the evidence backs.
func (s *SourceEvidence) VerifiedIn() promotion.VerifiedIn {
	return promotion.VerifiedIn{Environment: s.Environment, DesiredRevision: s.Evidence.DesiredRevision,
		ObservedRevision: s.Evidence.ObservedRevision, RenderedHash: s.Evidence.RenderedHash, RuntimeEvidence: s.Path, EvidenceCommit: s.Commit}
}

// ReadSourceEvidence reads app's record in env at base (the base branch's
// commit), finds the commit where it became ACCEPTED, and proves digest
// ran in env by the one proof (Prove: the notifier's signed evidence/v1
// file of that attempt, in that commit, agreeing with the record, in
// order with the history, every Pod of the digest running it). What a
// promotion adds: the record ACCEPTED for digest at base; the evidence's
// revisions of env's source kind (registry at base); the file unchanged at
// base since; no older than the policy's evidenceMaxAge at base; when the
// source overlay declared runtime checks at the observed revision, every
// one Passed in the evidence after a completed soak (rule
// checks-not-passed). What does not prove it is a refusal (exit 3, rule
// source-evidence, evidence-signature or checks-not-passed); an evidence
// file that is not evidence/v1 is invalid input (exit 4 naming the file
// and field). Verify, propose, check and the web view call it.
func ReadSourceEvidence(ctx context.Context, r *gitops.Repo, base, app, env, digest string, now time.Time) (*SourceEvidence, error) {
	file := promotion.RecordPath(app, env)
	refuse := func(format string, args ...any) error {
		return &exitcode.Refusal{Rule: RuleSourceEvidence, File: file, Reason: fmt.Sprintf("no runtime evidence of %s in %s: ", digest, env) +
			fmt.Sprintf(format, args...)}
	}
	rec, err := promotion.ReadRecord(ctx, r, base, app, env)
	switch {
	case err != nil:
		return nil, err
	case rec == nil:
		return nil, refuse("%s does not exist on %s", file, r.Base)
	case rec.State != promotion.Accepted:
		return nil, refuse("%s is %s, not ACCEPTED", file, rec.State)
	case rec.Artifact.Digest != digest:
		return nil, refuse("%s accepted %s", file, rec.Artifact.Digest)
	}
	want := evidence.Path(env, app, rec.PromotionID)
	if rec.Accepted.RuntimeEvidence != want {
		return nil, refuse("%s: accepted.runtimeEvidence is %q, not the notifier's evidence file %s", file, rec.Accepted.RuntimeEvidence, want)
	}
	commit, err := acceptedAt(ctx, r, base, rec)
	if err != nil {
		return nil, err
	}
	// The policy at base is read once: it names the notifier keys, the
	// registry says the source kind, and the evidence's maximum age.
	pol, err := promotion.ReadPolicy(ctx, r, base)
	if err != nil {
		return nil, err
	}
	keys, err := EvidenceKeys(ctx, r, base, pol)
	if err != nil {
		return nil, err
	}
	reg, err := promotion.Registry(pol)
	if err != nil {
		return nil, err
	}
	ev, why, err := Prove(ctx, r, commit, rec, keys)
	if err != nil {
		return nil, err
	}
	// Revisions of the wrong kind say why the rest does not hold.
	if kind := checkSourceKind(reg, env, ev); kind != "" {
		return nil, refuse("%s at %s: %s", want, gitrepo.Short(commit), kind)
	}
	if why != "" {
		return nil, refuse("%s", why)
	}
	atBase, found, err := ReadEvidence(ctx, r, base, want, app, env, keys)
	switch {
	case err != nil:
		return nil, err
	case !found || !reflect.DeepEqual(atBase, ev):
		return nil, refuse("%s was changed after the acceptance at %s: it is not the same at %s", want, gitrepo.Short(commit), gitrepo.Short(base))
	}
	s := &SourceEvidence{Environment: env, Record: rec, Evidence: ev, Path: want, Commit: commit}
	if why, err := ChecksPassed(ctx, r, rec, ev); err != nil || why != "" {
		if err != nil {
			return nil, err
		}
		return nil, &exitcode.Refusal{Rule: RuleChecksNotPassed, File: want,
			Reason: fmt.Sprintf("runtime checks of %s in %s not passed: ", digest, env) + why}
	}
	if maxAge := pol.EvidenceMaxAgeOf(env); !now.IsZero() && now.Sub(ev.Time) > maxAge {
		return nil, refuse("%s at %s was written at %s, %s ago: older than the evidenceMaxAge %s of %s in %s", want, gitrepo.Short(commit),
			ev.Time.UTC().Format(time.RFC3339), now.Sub(ev.Time).Round(time.Second), maxAge, env, promotion.PolicyFile)
	}
	return s, nil
}

// acceptedAt is the commit in the history of base where app/env's record
// became ACCEPTED as rec (the notifier commits the evidence and the record
// moved to ACCEPTED together): the oldest of the newest run of commits
// whose record is rec's attempt ACCEPTED at the same observed revision.
func acceptedAt(ctx context.Context, r *gitops.Repo, base string, rec *promotion.Record) (string, error) {
	at := base
	err := (&Reader{Repo: r}).EachVersion(ctx, base, rec.App, rec.Target.Environment, func(v Version) bool {
		old := v.rec
		if old == nil || old.PromotionID != rec.PromotionID || old.State != promotion.Accepted ||
			old.Accepted.ObservedRevision != rec.Accepted.ObservedRevision {
			return false
		}
		at = v.Commit
		return true
	})
	return at, err
}

// SourceEnvironment is the environment whose evidence backs rec: from, or
// the only other environment whose record on base is ACCEPTED for rec's
// digest.
func SourceEnvironment(ctx context.Context, r *gitops.Repo, base, from string, rec *promotion.Record) (string, error) {
	if from != "" {
		return from, nil
	}
	files, err := r.ListTree(ctx, base, promotion.Dir+"/"+rec.App)
	if err != nil {
		return "", err
	}
	var envs []string
	for _, f := range files {
		env, ok := strings.CutSuffix(strings.TrimPrefix(f, promotion.Dir+"/"+rec.App+"/"), ".yaml")
		if !ok || strings.Contains(env, "/") || env == rec.Target.Environment || !promotion.ValidName(env) {
			continue
		}
		src, err := promotion.ReadRecord(ctx, r, base, rec.App, env)
		if err != nil {
			return "", err
		}
		if src != nil && src.State == promotion.Accepted && src.Artifact.Digest == rec.Artifact.Digest {
			envs = append(envs, env)
		}
	}
	switch len(envs) {
	case 1:
		return envs[0], nil
	case 0:
		return "", exitcode.Refuse(RuleSourceEvidence, "no environment's record on %s is ACCEPTED for %s: nothing verified it", r.Base,
			rec.Artifact.Digest)
	}
	return "", exitcode.Usagef("%s is ACCEPTED in %s: name the source with --from", rec.Artifact.Digest, strings.Join(envs, ", "))
}

// checkSourceKind says why the evidence's revisions are not of env's
// source kind by reg, the registry at base ("" when they are, there is no
// evidence, or the registry does not list env): digests for an OCI environment, commit ids for a Git
// one. A SHA-256 commit and an artifact digest are one hex string apart:
// the registry, not the form, says which the controller read.
func checkSourceKind(reg *environment.Registry, env string, ev *evidence.Record) string {
	e, ok := reg.Get(env)
	if !ok || ev == nil {
		return ""
	}
	if oci := e.SourceKind() == environment.SourceOCI; oci != promotion.ValidOCIRevision(ev.DesiredRevision) {
		return fmt.Sprintf("its desiredRevision %s is %s, but environment %s's source is %s in %s", ev.DesiredRevision,
			promotion.RevisionKind(ev.DesiredRevision), env, map[bool]string{true: "an OCI artifact", false: "Git"}[oci], promotion.PolicyFile)
	}
	return ""
}
