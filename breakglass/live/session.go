package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// Session is one break-glass operation on one application in one
// environment: the GitOps repository, its base branch's commit, and what
// the base holds for the application there (the pause record, the
// environment registry). Pause, Resume and Writeback are the whole
// operations: the cluster step and its record in Git, each refused,
// recorded or undone together, so that no caller leaves a pause without a
// record or a record without the cluster step.
type Session struct {
	Repo *gitops.Repo
	// Base is the commit of the base branch the session read.
	Base     string
	App, Env string
	// Target is the controller object (Argo CD Application, Flux
	// Kustomization) that reconciles App in Env.
	Target   breakglass.Target
	Operator string
	// Record is the pause record at Base (nil when there is none).
	Record *breakglass.Record
	// Registry is the environment registry at Base.
	Registry *environment.Registry
}

// Open reads, at the base branch of r, the pause record of app in env and
// the environment registry.
func Open(ctx context.Context, r *gitops.Repo, app, env string, t breakglass.Target, operator string) (*Session, error) {
	base, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := breakglass.ReadRecord(ctx, r, base, app, env)
	if err != nil {
		return nil, err
	}
	reg, err := promotion.ReadRegistry(ctx, r, base)
	if err != nil {
		return nil, err
	}
	return &Session{Repo: r, Base: base, App: app, Env: env, Target: t, Operator: operator, Record: rec, Registry: reg}, nil
}

// RequireActive refuses (exit 3) a session whose application has no active
// pause; why says what cannot be done then.
func (s *Session) RequireActive(why string) error {
	if s.Record.Active() {
		return nil
	}
	return exitcode.Refuse(breakglass.RulePause, "%s/%s has no active pause record (%s on %s): %s",
		s.App, s.Env, breakglass.Path(s.Env, s.App), s.Repo.Base, why)
}

// commit writes rec (and extra files) on the base branch by
// compare-and-swap; check refuses a record someone else changed meanwhile.
func (s *Session) commit(ctx context.Context, rec *breakglass.Record, extra map[string][]byte, msg string,
	check func(prev *breakglass.Record) error) (string, error) {
	return breakglass.CommitRecord(ctx, s.Repo, s.Repo.Base, rec, extra, msg, check)
}

// Connect returns the client of the cluster the session's target is in.
// The session calls it only after every refusal that Git decides: a
// refused operation never needs the cluster.
type Connect func() (client.Client, error)

// controllerRefusal is err, a *breakglass.ConflictError (another writer
// won the race on the controller object), as a refusal (exit 3).
func controllerRefusal(err error) error {
	var ce *breakglass.ConflictError
	if errors.As(err, &ce) {
		return &exitcode.Refusal{Rule: breakglass.RuleController, Err: err}
	}
	return err
}

// Pause suspends the reconciliation of the session's target until
// expires and records it on the base branch (the record's commit is
// returned). An application already paused is refused; when recording
// fails, the pause is undone, so that no pause is left without its record.
func (s *Session) Pause(ctx context.Context, connect Connect, ticket string, now, expires time.Time) (*breakglass.Record, string, error) {
	if prev := s.Record; prev.Active() {
		return nil, "", exitcode.Refuse(breakglass.RulePause, "%s/%s is already paused by %s (ticket %s, until %s): see %s",
			s.App, s.Env, prev.Operator, prev.Ticket, prev.ExpiresAt.Format(time.RFC3339), breakglass.Path(s.Env, s.App))
	}
	c, err := connect()
	if err != nil {
		return nil, "", err
	}
	rec, err := Pause(ctx, c, breakglass.Request{Target: s.Target, App: s.App, Env: s.Env, Operator: s.Operator, Ticket: ticket,
		Now: now, ExpiresAt: expires, Registry: s.Registry, Prefix: s.Repo.Prefix})
	if err != nil {
		return nil, "", controllerRefusal(err)
	}
	msg := fmt.Sprintf("breakglass pause %s in %s\n\nTicket: %s\nOperator: %s\nExpires: %s\nSource-Revision: %s\n",
		s.App, s.Env, ticket, s.Operator, rec.ExpiresAt.Format(time.RFC3339), rec.SourceRevision)
	sha, err := s.commit(ctx, rec, nil, msg, func(prev *breakglass.Record) error {
		if prev.Active() {
			return exitcode.Refuse(breakglass.RulePause, "%s/%s was paused first by %s (ticket %s)", s.App, s.Env, prev.Operator, prev.Ticket)
		}
		return nil
	})
	if err == nil {
		s.Record = rec
		return rec, sha, nil
	}
	// Not recorded: do not leave an unrecorded pause behind.
	if uerr := Undo(context.WithoutCancel(ctx), c, rec); uerr != nil {
		// Only the recording failure is wrapped, it decides the exit code;
		// of the undo failure only the text is told.
		return nil, "", fmt.Errorf("recording the pause failed (%w) and undoing it failed too: %s is paused without a record: %s",
			err, s.Target, uerr.Error())
	}
	return nil, "", fmt.Errorf("recording the pause in %s failed, so the pause was undone (%s reconciles as before): %w",
		breakglass.Path(s.Env, s.App), s.Target, err)
}

// ResumeRequest says how to resume a pause.
type ResumeRequest struct {
	// Force resumes although the write-back is not merged; Reason (required
	// then) is recorded.
	Force  bool
	Reason string
	// Observe is how long the live objects are watched after resuming (0:
	// not watched).
	Observe time.Duration
}

// Resumed is a resume as recorded.
type Resumed struct {
	// At is when the controller object was read back with reconciliation
	// on again.
	At time.Time
	// Flapping names the objects written back and forth while watched
	// (the caller refuses: something fights the desired state).
	Flapping []string
	// Commit is the commit of the resumed record and Evidence the file of
	// the pause's evidence written with it.
	Commit, Evidence string
}

// Resume re-enables the reconciliation of the session's paused target once
// the write-back is merged into the base branch (or req.Force), watches
// its live objects for req.Observe, and commits the resumed record and the
// pause's evidence together on the base branch.
func (s *Session) Resume(ctx context.Context, connect Connect, req ResumeRequest) (*Resumed, error) {
	if err := s.RequireActive("it is not paused, nothing to resume"); err != nil {
		return nil, err
	}
	if req.Force && req.Reason == "" {
		return nil, exitcode.Usagef("a forced resume needs a reason (it is recorded)")
	}
	rec, merged := s.Record, ""
	if !req.Force {
		var err error
		if merged, err = breakglass.Merged(ctx, s.Repo, rec, s.Base); err != nil {
			return nil, err
		}
	}
	c, err := connect()
	if err != nil {
		return nil, err
	}
	restored, err := Restore(ctx, c, rec)
	if err != nil {
		return nil, controllerRefusal(err)
	}
	flapping, err := Flapping(ctx, c, rec, req.Observe, 0)
	if err != nil {
		return nil, fmt.Errorf("%s is resumed in the cluster, but watching its objects failed (not recorded): %w", s.Target, err)
	}
	rec.State = breakglass.Resumed
	rec.Resume = &breakglass.Resume{At: restored.At, By: s.Operator, Force: req.Force, Reason: req.Reason, WritebackMerged: merged,
		Flapping: flapping}
	if req.Observe > 0 {
		rec.Resume.ObservedFor = req.Observe.String()
	}
	ev, err := breakglass.NewEvidence(rec, restored).Marshal()
	if err != nil {
		return nil, fmt.Errorf("%s is resumed in the cluster but its evidence is incomplete (not recorded): %w", s.Target, err)
	}
	evPath := breakglass.EvidencePath(s.Env, s.App, rec.PausedAt)
	msg := fmt.Sprintf("breakglass resume %s in %s\n\nTicket: %s\nOperator: %s\nForced: %t\nReason: %s\nWriteback-Merged: %s\nEvidence: %s\n",
		s.App, s.Env, rec.Ticket, s.Operator, req.Force, req.Reason, merged, evPath)
	sha, err := s.commit(ctx, rec, map[string][]byte{evPath: ev}, msg, func(prev *breakglass.Record) error {
		if !prev.Active() {
			return exitcode.Refuse(breakglass.RulePause, "%s/%s was resumed by someone else meanwhile", s.App, s.Env)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s is resumed in the cluster but recording it failed: %w", s.Target, err)
	}
	return &Resumed{At: restored.At, Flapping: flapping, Commit: sha, Evidence: evPath}, nil
}

// Writeback proposes the permanent live changes of the session's paused
// application as patches in its overlay on a branch (ProposeWriteback),
// opens its pull request when fc is set, and names the write-back in the
// pause record on the base branch (resume waits for it to be merged).
func (s *Session) Writeback(ctx context.Context, connect Connect, opts breakglass.WritebackOptions,
	fc *forge.Client) (*breakglass.WritebackResult, error) {
	if err := s.RequireActive("nothing was paused, so there is nothing to write back"); err != nil {
		return nil, err
	}
	c, err := connect()
	if err != nil {
		return nil, err
	}
	rec := s.Record
	opts.Base = s.Base
	res, err := ProposeWriteback(ctx, s.Repo, c, rec, opts)
	if err != nil {
		return nil, err
	}
	if fc != nil && res.Branch != "" {
		pr, err := fc.OpenPullRequest(ctx, forge.PullRequest{Title: fmt.Sprintf("breakglass write-back %s in %s (%s)", s.App, s.Env, rec.Ticket),
			Head: res.Branch, Base: s.Repo.Base, Body: breakglass.PullRequestBody(rec, res)})
		if err != nil {
			return nil, fmt.Errorf("branch %s pushed, but opening the pull request failed: %w", res.Branch, err)
		}
		res.PR = pr.URL
	}
	wb := &breakglass.Writeback{Branch: res.Branch, Commit: res.Commit, PR: res.PR, Classified: res.Changes}
	for _, ch := range res.Changes {
		wb.Changes = append(wb.Changes, ch.String())
	}
	rec.Writeback = wb
	msg := fmt.Sprintf("breakglass writeback %s in %s\n\nTicket: %s\nWriteback-Branch: %s\nWriteback-Commit: %s\n",
		s.App, s.Env, rec.Ticket, res.Branch, res.Commit)
	if _, err := s.commit(ctx, rec, nil, msg, func(prev *breakglass.Record) error {
		if !prev.Active() {
			return exitcode.Refuse(breakglass.RulePause, "%s/%s was resumed meanwhile", s.App, s.Env)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("write-back %s pushed, but recording it in %s failed: %w", res.Branch, breakglass.Path(s.Env, s.App), err)
	}
	return res, nil
}
