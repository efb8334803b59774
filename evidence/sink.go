package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
)

// Decide is called with the promotion record as it is at the branch tip
// (RECONCILING) on every attempt of a write, so that its checks run on what
// is really there; it returns the evidence to write, or an error that
// aborts the write (nothing is committed).
type Decide func(ctx context.Context, rec *promotion.Record, tip string) (*Record, error)

// Written is the outcome of a write.
type Written struct {
	// Commit is the new commit ("" for a duplicate).
	Commit string
	// Evidence is the record written, or the one already there.
	Evidence *Record
	// Duplicate is true when the same evidence was already in Git.
	Duplicate bool
}

// GitSink commits evidence and the promotion record's new state to a
// branch of the GitOps repository.
type GitSink struct {
	Repo *gitrepo.Repo
	// Branch is the branch the promotion records live on.
	Branch string
	// Attempts bounds the compare-and-swap retries (default 8).
	Attempts int
	// By is written as the history entry's author (default "throughline-notifier").
	By string
	// Signer signs every evidence file the sink writes (Sign: the SSH
	// signature in SignaturePath beside it, in the same commit). Nil
	// writes unsigned evidence, which every gate refuses.
	Signer ssh.Signer

	// mu serializes this replica's writes to the branch (concurrent writes
	// from one clone only lose compare-and-swap races to each other);
	// replicas still race, and the push decides.
	mu sync.Mutex
	// seen caches evidence known to be in the remote's history, keyed by
	// app, environment and observed revision. It only short-cuts a
	// duplicate: an entry is added after the evidence was read from, or
	// pushed to, the remote, whose history is never rewritten, so a hit is
	// always true; a miss (a new replica) reads Git.
	seenMu sync.Mutex
	seen   map[seenKey]*Record
}

type seenKey struct{ app, env, rev string }

// Known returns the evidence of app in env for observedRevision when this
// sink has already seen it in the remote's history (nil otherwise): a
// duplicate answered without any Git I/O.
func (s *GitSink) Known(app, env, observedRevision string) *Record {
	return s.lookup(seenKey{app, env, observedRevision})
}

const maxSeen = 100000

func (s *GitSink) lookup(k seenKey) *Record {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	return s.seen[k]
}

func (s *GitSink) remember(k seenKey, r *Record) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if s.seen == nil || len(s.seen) >= maxSeen {
		s.seen = map[seenKey]*Record{}
	}
	s.seen[k] = r
}

// Write reads the promotion record of app in env at the tip of the branch
// and, when it is RECONCILING, asks decide for the evidence, then commits
// evidence/<env>/<app>/<promotionId>.json and the record moved to the
// decision in one commit, pushed compare-and-swap (fetch, re-decide and
// retry when another writer moved the branch; never forced). The record is
// read with promotion.ReadRecord: one that does not parse, or names another
// app or environment than its path, is invalid input (exitcode.ErrInvalid).
//
// Idempotency comes from Git: when the record is already decided and its
// evidence file records observedRevision, Write returns that evidence with
// Duplicate set and commits nothing. A record in another state wraps
// ErrNotApplicable, a missing record or a name that is not one (the names
// become paths) ErrUnknownApp. Any error means that
// nothing this call made was pushed.
func (s *GitSink) Write(ctx context.Context, app, env, observedRevision string, decide Decide) (*Written, error) {
	// app and env come from a delivery and become paths in the repository.
	for _, n := range []string{app, env} {
		if !promotion.ValidName(n) {
			return nil, fmt.Errorf("%q is not an app or environment name: %w", n, ErrUnknownApp)
		}
	}
	attempts := s.Attempts
	if attempts < 1 {
		attempts = 8
	}
	by := s.By
	if by == "" {
		by = "throughline-notifier"
	}
	key := seenKey{app, env, observedRevision}
	if ev := s.lookup(key); ev != nil {
		return &Written{Evidence: ev, Duplicate: true}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev := s.lookup(key); ev != nil {
		return &Written{Evidence: ev, Duplicate: true}, nil
	}
	var out Written
	file := promotion.RecordPath(app, env)
	repo := &gitops.Repo{Repo: s.Repo}
	commit, err := s.Repo.Update(ctx, s.Branch, attempts, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		out = Written{}
		rec, err := promotion.ReadRecord(ctx, repo, tip, app, env)
		if err != nil {
			return nil, "", err
		}
		if rec == nil {
			return nil, "", fmt.Errorf("%s at %s: %w", file, gitrepo.Short(tip), ErrUnknownApp)
		}
		evPath := Path(env, app, rec.PromotionID)
		if promotion.Terminal(rec.State) {
			prev, err := s.Repo.ReadFile(ctx, tip, evPath)
			if err == nil {
				old, perr := Parse(evPath, prev)
				if perr == nil && old.ObservedRevision == observedRevision {
					out = Written{Evidence: old, Duplicate: true}
					return nil, "", ErrDuplicate
				}
			}
			return nil, "", fmt.Errorf("promotion %s is %s: %w", rec.PromotionID, rec.State, ErrNotApplicable)
		}
		if rec.State != promotion.Reconciling {
			return nil, "", fmt.Errorf("promotion %s is %s, not RECONCILING: %w", rec.PromotionID, rec.State, ErrNotApplicable)
		}
		ev, err := decide(ctx, rec, tip)
		if err != nil {
			return nil, "", err
		}
		ev.SchemaVersion = SchemaVersion
		ev.App, ev.Environment, ev.PromotionID = app, env, rec.PromotionID
		ev.Image, ev.ArtifactDigest = rec.Artifact.Image, rec.Artifact.Digest
		ev.DesiredRevision, ev.DesiredCommit = rec.Reconciling.DesiredRevision, rec.Reconciling.DesiredCommit
		ev.DesiredRenderedHash = rec.Target.RenderedHash
		ev.Overrides = rec.Overrides
		ev.Time = ev.Time.UTC().Truncate(time.Second)
		switch ev.Decision {
		case promotion.Accepted:
			err = rec.Accept(ev.ObservedRevision, evPath, ev.Time, by)
		case promotion.Halted:
			err = rec.Stop(promotion.Halted, ev.Reason, ev.Time, by)
		default:
			err = fmt.Errorf("evidence %s: decision %q, want ACCEPTED or HALTED", evPath, ev.Decision)
		}
		if err != nil {
			return nil, "", err
		}
		evJSON, err := ev.Marshal()
		if err != nil {
			return nil, "", err
		}
		recYAML, err := rec.Marshal()
		if err != nil {
			return nil, "", err
		}
		files := map[string][]byte{evPath: evJSON, file: recYAML}
		if s.Signer != nil {
			if files[SignaturePath(evPath)], err = Sign(evJSON, s.Signer); err != nil {
				return nil, "", fmt.Errorf("evidence %s: %w", evPath, err)
			}
		}
		out.Evidence = ev
		msg := fmt.Sprintf("throughline: %s %s in %s\n\nPromotion: %s\nDesired-Revision: %s\nObserved-Revision: %s\nEvidence: %s\n",
			app, ev.Decision, env, rec.PromotionID, ev.DesiredRevision, ev.ObservedRevision, evPath)
		if ev.Reason != "" {
			msg += "Reason: " + ev.Reason + "\n"
		}
		return files, msg, nil
	})
	if errors.Is(err, ErrDuplicate) {
		s.remember(key, out.Evidence)
		return &out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("evidence for %s in %s on %s: %w", app, env, s.Branch, err)
	}
	out.Commit = commit
	s.remember(key, out.Evidence)
	return &out, nil
}

// SummaryPath is the file beside an evidence file that says where the
// verification summary of its acceptance is (Summary, JSON): the evidence
// path with ".summary" appended, so that no reader of evidence/**/*.json
// takes it for evidence.
func SummaryPath(file string) string { return file + ".summary" }

// RecordSummary writes sum, the verification summary of the ACCEPTED
// evidence of promotionID of app in env, to SummaryPath beside it at the
// tip of the branch, in a commit of its own (compare-and-swap push, never
// forced). The same summary there already commits nothing (Commit "");
// another summary there, or evidence that is missing or not ACCEPTED, is
// not changed (ErrNotApplicable).
func (s *GitSink) RecordSummary(ctx context.Context, app, env, promotionID string, sum Summary) (string, error) {
	for _, n := range []string{app, env} {
		if !promotion.ValidName(n) {
			return "", fmt.Errorf("%q is not an app or environment name: %w", n, ErrUnknownApp)
		}
	}
	if !promotion.ValidDigest(sum.Statement) || !promotion.ValidDigest(sum.Bundle) || !promotion.ValidDigest(sum.Manifest) ||
		!promotion.ValidRevision(sum.AcceptanceCommit) {
		return "", fmt.Errorf("verification summary %+v: statement, bundle and manifest sha256:<hex>, a full acceptance commit", sum)
	}
	attempts := s.Attempts
	if attempts < 1 {
		attempts = 8
	}
	evPath := Path(env, app, promotionID)
	sumPath := SummaryPath(evPath)
	sumJSON, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding the verification summary of %s: %w", evPath, err)
	}
	sumJSON = append(sumJSON, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	commit, err := s.Repo.Update(ctx, s.Branch, attempts, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		if prev, err := s.Repo.ReadFile(ctx, tip, sumPath); err == nil {
			if bytes.Equal(prev, sumJSON) {
				return nil, "", ErrDuplicate
			}
			return nil, "", fmt.Errorf("%s names another verification summary already: %w", sumPath, ErrNotApplicable)
		} else if !errors.Is(err, gitrepo.ErrNotFound) {
			return nil, "", fmt.Errorf("%s at %s: %w", sumPath, gitrepo.Short(tip), err)
		}
		data, err := s.Repo.ReadFile(ctx, tip, evPath)
		if err != nil {
			return nil, "", fmt.Errorf("evidence %s at %s: %w", evPath, gitrepo.Short(tip), errors.Join(err, ErrNotApplicable))
		}
		ev, err := Parse(evPath, data)
		if err != nil {
			return nil, "", err
		}
		if ev.Decision != promotion.Accepted {
			return nil, "", fmt.Errorf("evidence %s is %s: %w", evPath, ev.Decision, ErrNotApplicable)
		}
		msg := fmt.Sprintf("throughline: verification summary of %s in %s\n\nPromotion: %s\nAcceptance-Commit: %s\n"+
			"Summary-Statement: %s\nSummary-Manifest: %s\nEvidence: %s\n", app, env, promotionID, sum.AcceptanceCommit,
			sum.Statement, sum.Manifest, evPath)
		return map[string][]byte{sumPath: sumJSON}, msg, nil
	})
	if errors.Is(err, ErrDuplicate) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("verification summary of %s in %s on %s: %w", app, env, s.Branch, err)
	}
	return commit, nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b in
// the repository; an unknown commit is not, and a git that fails is an
// error, never a "no" (gitrepo.Repo.IsAncestor).
func (s *GitSink) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	return s.Repo.IsAncestor(ctx, a, b)
}

// StatusSetter sets commit statuses (*forge.Client).
type StatusSetter interface {
	SetCommitStatus(ctx context.Context, st forge.CommitStatus) error
}

// StatusSink posts the decision as a commit status on the desired commit,
// context throughline/<env>/<app>.
type StatusSink struct {
	Forge StatusSetter
	// Attempts bounds the tries (default 5); Backoff is the first wait,
	// doubled after each retryable failure (default 1s).
	Attempts int
	Backoff  time.Duration
	// TargetURL, when set, is formatted with the evidence path
	// (e.g. "https://github.com/org/gitops/blob/main/%s").
	TargetURL string
}

// Context is the commit status context of app in env.
func Context(env, app string) string { return "throughline/" + env + "/" + app }

// Post sets the status, on the desired commit (for an OCI environment the
// commit the desired artifact was built from) (success for ACCEPTED, failure for HALTED, pending
// for a promotion still RECONCILING that waits for its controller),
// retrying transport errors, rate limits and server
// errors with exponential backoff.
func (s *StatusSink) Post(ctx context.Context, ev *Record) error {
	st := forge.CommitStatus{SHA: ev.DesiredRevision, Context: Context(ev.Environment, ev.App)}
	if ev.DesiredCommit != "" {
		st.SHA = ev.DesiredCommit // an OCI environment: the status goes on the commit the artifact was built from
	}
	switch ev.Decision {
	case promotion.Accepted:
		st.State, st.Description = forge.StatusSuccess, fmt.Sprintf("ACCEPTED: %s runs %s", ev.Environment, ev.ArtifactDigest)
		if ev.SummaryNote != "" {
			st.Description += "; " + ev.SummaryNote
		}
	case promotion.Reconciling:
		// Waiting for the controller to recover: no evidence file yet.
		st.State, st.Description = forge.StatusPending, ev.Reason
	default:
		st.State, st.Description = forge.StatusFailure, "HALTED: "+ev.Reason
	}
	if s.TargetURL != "" && ev.Decision != promotion.Reconciling {
		st.TargetURL = fmt.Sprintf(s.TargetURL, Path(ev.Environment, ev.App, ev.PromotionID))
	}
	attempts, wait := s.Attempts, s.Backoff
	if attempts < 1 {
		attempts = 5
	}
	if wait <= 0 {
		wait = time.Second
	}
	var err error
	for i := 0; i < attempts; i++ {
		if err = s.Forge.SetCommitStatus(ctx, st); err == nil || !forge.Retryable(err) {
			break
		}
		if i == attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("commit status %s on %s: %w", st.Context, st.SHA, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
	if err != nil {
		return fmt.Errorf("commit status %s on %s: %w", st.Context, st.SHA, err)
	}
	return nil
}
