package ledger

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
)

// RuleEvidenceSignature refuses runtime evidence that is not signed by a
// notifier key the policy's evidenceSigners lists for its environment.
const RuleEvidenceSignature = "evidence-signature"

// ClockSkew is how far the clocks of the notifier, the forge and the
// people who commit may disagree: evidence may be dated up to this much
// before the commit it observes, or after the commit that records it.
const ClockSkew = 5 * time.Minute

// EvidenceKeys reads the notifier keys the policy pol, read at rev, lists
// (evidenceSigners, at rev): nil when it lists none. A file that is
// missing or does not parse is invalid input naming it.
func EvidenceKeys(ctx context.Context, r *gitops.Repo, rev string, pol *promotion.Policy) (*evidence.Keys, error) {
	if pol == nil || pol.EvidenceSigners == "" {
		return nil, nil
	}
	file := pol.EvidenceSigners
	data, found, err := readBlob(ctx, r, rev, file)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, exitcode.InvalidFile(promotion.PolicyFile, fmt.Errorf("evidenceSigners: %s does not exist at %s", file, gitrepo.Short(rev)))
	}
	keys, err := evidence.ParseKeys(file, data)
	if err != nil {
		return nil, exitcode.InvalidFile(file, fmt.Errorf("evidenceSigners of %s: %w", promotion.PolicyFile, err))
	}
	return keys, nil
}

// ReadEvidence is the one way runtime evidence is read from Git: the
// evidence file at rev and its signature beside it, opened with keys
// (evidence.Open: the signature is checked before a byte is parsed; keys
// nil, a policy listing no evidenceSigners, accepts none). found is false when there is no
// evidence file. A signature that does not prove the file is a refusal
// (exit 3, RuleEvidenceSignature) naming the file and the key found; a
// file that does not parse, or names another app or environment than its
// path, is invalid input (exit 4).
func ReadEvidence(ctx context.Context, r *gitops.Repo, rev, file, app, env string, keys *evidence.Keys) (*evidence.Record, bool, error) {
	data, found, err := readBlob(ctx, r, rev, file)
	if err != nil || !found {
		return nil, false, err
	}
	sig, _, err := readBlob(ctx, r, rev, evidence.SignaturePath(file))
	if err != nil {
		return nil, false, err
	}
	ev, err := openEvidence(file, env, data, sig, keys)
	var se *evidence.SignatureError
	switch {
	case errors.As(err, &se):
		return nil, false, &exitcode.Refusal{Rule: RuleEvidenceSignature, File: file, Reason: fmt.Sprintf("at %s: %s", gitrepo.Short(rev), se.Problem())}
	case err != nil && exitcode.Code(err) == exitcode.Invalid:
		return nil, false, err
	case err != nil:
		return nil, false, exitcode.InvalidFile(file, err)
	case ev.App != app || ev.Environment != env:
		return nil, false, exitcode.InvalidFile(file,
			fmt.Errorf("names app %q environment %q, but lives at the path of %s/%s", ev.App, ev.Environment, app, env))
	}
	return ev, true, nil
}

// opened remembers evidence.Open's answers by what decides them: the
// file's path and environment, the SHA-256 of its content and of its
// signature, and the notifier keys' Sum. The same evidence file read at
// many commits (every History, every proof of the same acceptance) is
// verified and parsed once per process; a rewritten or re-signed file, or
// other keys, is another key and is opened anew.
var opened struct {
	mu sync.Mutex
	m  map[openedKey]openedDoc
}

type openedKey struct {
	file, env string
	data, sig [sha256.Size]byte
	sigFound  bool
	keys      [sha256.Size]byte
}

type openedDoc struct {
	ev  *evidence.Record
	err error
}

// openEvidence is evidence.Open, remembered (opened): each caller gets its
// own copy of the record.
func openEvidence(file, env string, data, sig []byte, keys *evidence.Keys) (*evidence.Record, error) {
	ks, ok := keys.Sum()
	if !ok { // keys ParseKeys did not make (none, or unusable): not remembered
		return evidence.Open(file, env, data, sig, keys)
	}
	k := openedKey{file: file, env: env, data: sha256.Sum256(data), sig: sha256.Sum256(sig), sigFound: sig != nil, keys: ks}
	opened.mu.Lock()
	d, ok := opened.m[k]
	opened.mu.Unlock()
	if !ok {
		ev, err := evidence.Open(file, env, data, sig, keys)
		d = openedDoc{ev: ev, err: err}
		opened.mu.Lock()
		if opened.m == nil || len(opened.m) >= maxCached {
			opened.m = map[openedKey]openedDoc{}
		}
		opened.m[k] = d
		opened.mu.Unlock()
	}
	return deepCopy(d.ev), d.err
}

// readBlob reads file at rev: found false when there is none; a symbolic
// link is invalid input naming it.
func readBlob(ctx context.Context, r *gitops.Repo, rev, file string) ([]byte, bool, error) {
	data, err := r.ReadFile(ctx, rev, file)
	switch {
	case errors.Is(err, gitrepo.ErrNotFound):
		return nil, false, nil
	case errors.Is(err, gitrepo.ErrSymlink):
		return nil, false, exitcode.InvalidFile(file, err)
	case err != nil:
		return nil, false, fmt.Errorf("reading %s at %s: %w", file, gitrepo.Short(rev), err)
	}
	return data, true, nil
}

// checkOrder says why Git evidence ev, recorded at commit, is out of order
// ("" when it is not): its desired and observed revisions must be commits
// in the history of commit (what the controller read was on the branch
// before the notifier recorded it), ev must not be dated before the
// observed commit (it cannot have observed a commit not yet made) nor
// after commit (it cannot be older than the commit that records it), and
// its verifiedAt must fall between the desired commit and its own decision
// (the delivery metrics' order), each within ClockSkew.
func checkOrder(ctx context.Context, r *gitops.Repo, commit string, ev *evidence.Record) (string, error) {
	for _, rv := range []struct{ field, rev string }{{"desiredRevision", ev.DesiredRevision}, {"observedRevision", ev.ObservedRevision}} {
		if !promotion.ValidRevision(rv.rev) {
			return fmt.Sprintf("its %s %q is not a full commit id", rv.field, rv.rev), nil
		}
		in, err := r.IsAncestor(ctx, rv.rev, commit)
		if err != nil {
			return "", fmt.Errorf("evidence %s: is %s %s in the history of %s: %w", evidence.Path(ev.Environment, ev.App, ev.PromotionID),
				rv.field, rv.rev, commit, err)
		}
		if !in {
			return fmt.Sprintf("its %s %s is not a commit in the history of %s, where it was recorded", rv.field, gitrepo.Short(rv.rev),
				gitrepo.Short(commit)), nil
		}
	}
	observed, err := r.CommitTime(ctx, ev.ObservedRevision)
	if err != nil {
		return "", err
	}
	desired, err := r.CommitTime(ctx, ev.DesiredRevision)
	if err != nil {
		return "", err
	}
	recorded, err := r.CommitTime(ctx, commit)
	if err != nil {
		return "", err
	}
	switch {
	case ev.Time.Before(observed.Add(-ClockSkew)):
		return fmt.Sprintf("it is dated %s, before the observed commit %s was made (%s)", ev.Time.UTC().Format(time.RFC3339),
			gitrepo.Short(ev.ObservedRevision), observed.UTC().Format(time.RFC3339)), nil
	case ev.Time.After(recorded.Add(ClockSkew)):
		return fmt.Sprintf("it is dated %s, after the commit %s that records it (%s)", ev.Time.UTC().Format(time.RFC3339),
			gitrepo.Short(commit), recorded.UTC().Format(time.RFC3339)), nil
	case ev.VerifiedAt != nil && ev.VerifiedAt.Before(desired.Add(-ClockSkew)):
		return fmt.Sprintf("its verifiedAt %s is before the desired commit %s was made (%s)", ev.VerifiedAt.UTC().Format(time.RFC3339),
			gitrepo.Short(ev.DesiredRevision), desired.UTC().Format(time.RFC3339)), nil
	case ev.VerifiedAt != nil && ev.VerifiedAt.After(ev.Time.Add(ClockSkew)):
		return fmt.Sprintf("its verifiedAt %s is after its own ACCEPTED decision (%s)", ev.VerifiedAt.UTC().Format(time.RFC3339),
			ev.Time.UTC().Format(time.RFC3339)), nil
	}
	return "", nil
}
