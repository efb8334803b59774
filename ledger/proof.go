package ledger

import (
	"context"
	"fmt"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
)

// Prove is the one answer to "does Git prove that rec ran?": rec, the
// record as it is in commit, ACCEPTED, names the notifier's evidence file
// of its attempt, and that file, read in commit,
//   - is signed by a notifier key keys (the policy's evidenceSigners) list
//     for rec's environment (ReadEvidence: a refusal, rule
//     evidence-signature, otherwise; keys nil accepts nothing);
//   - says ACCEPTED for the same attempt, digest and revisions (Accepts);
//   - observed the desired revision, or a later commit rendering the
//     approved objects (CheckRevisions);
//   - for a Git source, names revisions that are commits in the history of
//     commit and is dated after the observed commit and before commit
//     (checkOrder);
//   - shows every Pod of the digest running it (CheckPods).
//
// why says what does not hold ("" when the evidence proves rec); a file
// that is not signed or not evidence/v1 is the error ReadEvidence
// returns (exit 3 or 4); any other error is a failure to read Git.
// ReadSourceEvidence (verify, propose, check, the web view) and History
// (rollback, prior acceptances, the web view's rollback arrows) decide
// through it; what they add is their own question (the file unchanged at
// the base, the runtime checks, the age, the source kind).
func Prove(ctx context.Context, r *gitops.Repo, commit string, rec *promotion.Record, keys *evidence.Keys) (*evidence.Record, string, error) {
	env, app := rec.Target.Environment, rec.App
	want := evidence.Path(env, app, rec.PromotionID)
	switch {
	case rec.State != promotion.Accepted || rec.Accepted == nil:
		return nil, fmt.Sprintf("%s is %s, not ACCEPTED", promotion.RecordPath(app, env), rec.State), nil
	case rec.Accepted.RuntimeEvidence != want:
		return nil, fmt.Sprintf("the record's accepted.runtimeEvidence is %q, not the notifier's evidence file %s", rec.Accepted.RuntimeEvidence, want), nil
	}
	ev, found, err := ReadEvidence(ctx, r, commit, want, app, env, keys)
	switch {
	case err != nil:
		return nil, "", err
	case !found:
		return nil, fmt.Sprintf("%s names %s, which does not exist at %s, where the record says ACCEPTED (no runtime evidence)",
			promotion.RecordPath(app, env), want, gitrepo.Short(commit)), nil
	}
	why := ev.Accepts(rec)
	if why == "" {
		if why, err = ev.CheckRevisions(ctx, r.IsAncestor); err != nil {
			return nil, "", err
		}
	}
	if why == "" && !promotion.ValidOCIRevision(ev.DesiredRevision) {
		if why, err = checkOrder(ctx, r, commit, ev); err != nil {
			return nil, "", err
		}
	}
	if why == "" {
		why = ev.CheckPods(rec.Artifact.Digest)
	}
	if why != "" {
		return ev, fmt.Sprintf("%s at %s: %s", want, gitrepo.Short(commit), why), nil
	}
	return ev, "", nil
}
