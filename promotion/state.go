package promotion

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// next is the one forward state of each state.
var next = map[State]State{Candidate: Verified, Verified: Approved, Approved: Reconciling, Reconciling: Accepted}

// Terminal reports whether no transition leaves s.
func Terminal(s State) bool { return s == Accepted || s == Halted || s == Rejected }

// CanTransition reports whether from -> to is legal: one step forward, or
// HALTED / REJECTED from any state that is not terminal.
func CanTransition(from, to State) bool {
	if Terminal(from) {
		return false
	}
	if to == Halted || to == Rejected {
		return true
	}
	return next[from] == to
}

// TransitionError is a transition the state machine refuses. Record is
// the refusal of the record the transition would make, when that is why
// (Reason is then its message). It is deliberately not unwrapped: callers
// tell a refused transition from a record that cannot be used (the
// notifier answers them differently).
type TransitionError struct {
	ID       string
	From, To State
	Reason   string
	Record   *RecordError
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("promotion %s: %s -> %s refused: %s", e.ID, e.From, e.To, e.Reason)
}

// NewCandidate makes the CANDIDATE record of an attempt.
func NewCandidate(app string, attempt int, art Artifact, target Target, at time.Time, by string) (*Record, error) {
	r := &Record{
		SchemaVersion: SchemaVersion, App: app, Attempt: attempt, State: Candidate,
		Artifact: art, Target: target,
		History: []Transition{{State: Candidate, At: at.UTC().Truncate(time.Second), By: by}},
	}
	r.PromotionID = r.Key().ID()
	return r, r.Validate()
}

func (r *Record) advance(to State, at time.Time, by, reason string, set func()) error {
	if !CanTransition(r.State, to) {
		why := "not the next state"
		if Terminal(r.State) {
			why = r.State.String() + " is final: a fix makes a new candidate"
		}
		return &TransitionError{ID: r.PromotionID, From: r.State, To: to, Reason: why}
	}
	c := r.clone()
	set()
	r.State = to
	r.History = append(r.History, Transition{State: to, At: at.UTC().Truncate(time.Second), By: by, Reason: reason})
	if last := c.History[len(c.History)-1].At; r.History[len(r.History)-1].At.Before(last) {
		r.History[len(r.History)-1].At = last
	}
	if err := r.Validate(); err != nil {
		*r = *c
		te := &TransitionError{ID: r.PromotionID, From: c.State, To: to, Reason: err.Error()}
		errors.As(err, &te.Record)
		return te
	}
	return nil
}

func (s State) String() string { return string(s) }

func (r *Record) clone() *Record {
	c := *r
	c.History = append([]Transition(nil), r.History...)
	if r.VerifiedIn != nil {
		v := *r.VerifiedIn
		if v.PriorAcceptance != nil {
			p := *v.PriorAcceptance
			v.PriorAcceptance = &p
		}
		c.VerifiedIn = &v
	}
	if r.Approval != nil {
		v := *r.Approval
		c.Approval = &v
	}
	c.Approvals = append([]Approval(nil), r.Approvals...)
	if r.Approvals == nil {
		c.Approvals = nil
	}
	c.Overrides = slices.Clone(r.Overrides)
	if r.Reconciling != nil {
		v := *r.Reconciling
		c.Reconciling = &v
	}
	if r.Accepted != nil {
		v := *r.Accepted
		c.Accepted = &v
	}
	return &c
}

// VerifyByCandidacy records the VERIFIED gate of a candidacy: the record
// of a first environment where CI's artifact entered the chain, verified by
// its own supply-chain evidence (which the caller re-verified against the
// environment's trust policy).
func (r *Record) VerifyByCandidacy(at time.Time, by string) error {
	if !r.IsCandidacy() {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Verified,
			Reason: "artifact.evidence does not name this attempt as its candidacy"}
	}
	return r.advance(Verified, at, by, "", func() {
		r.VerifiedIn = &VerifiedIn{Kind: KindCandidacy, Environment: r.Target.Environment}
	})
}

// VerifyByAdoption records the VERIFIED gate of an adopted baseline: the
// first record of an environment, for what it ran when throughline was
// installed. It cites no evidence: only the live verification that follows
// its RECONCILING accepts it.
func (r *Record) VerifyByAdoption(at time.Time, by string) error {
	if r.Attempt != 1 {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Verified, Reason: "only an environment's first record is its adopted baseline"}
	}
	return r.advance(Verified, at, by, "adopted: the environment ran it when throughline was installed", func() {
		r.VerifiedIn = &VerifiedIn{Kind: KindAdoption, Environment: r.Target.Environment}
	})
}

// Verify records the VERIFIED gate: the source environment's evidence for
// this artifact.
func (r *Record) Verify(ev VerifiedIn, at time.Time, by string) error {
	var errs []error
	for f, v := range map[string]string{"environment": ev.Environment, "runtimeEvidence": ev.RuntimeEvidence} {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("verifiedIn.%s is missing", f))
		}
	}
	for f, v := range map[string]string{"desiredRevision": ev.DesiredRevision, "observedRevision": ev.ObservedRevision} {
		if !ValidSourceRevision(v) {
			errs = append(errs, fmt.Errorf("verifiedIn.%s %q is neither a full commit id nor an OCI digest", f, v))
		}
	}
	if !ValidDigest(ev.RenderedHash) {
		errs = append(errs, fmt.Errorf("verifiedIn.renderedHash %q is not sha256:<hex>", ev.RenderedHash))
	}
	if err := errors.Join(errs...); err != nil {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Verified, Reason: err.Error()}
	}
	return r.advance(Verified, at, by, "", func() { r.VerifiedIn = &ev })
}

// Approve records the APPROVED gate, binding the approver to the input hash
// of the target as rendered now.
func (r *Record) Approve(approver string, in ApprovalInput, expiresAt, at time.Time) error {
	if strings.TrimSpace(approver) == "" {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Approved, Reason: "approver is missing"}
	}
	if in.RenderedHash != r.Target.RenderedHash {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Approved,
			Reason: fmt.Sprintf("the target renders %s, the record proposed %s", in.RenderedHash, r.Target.RenderedHash)}
	}
	expiresAt = expiresAt.UTC().Truncate(time.Second)
	in.ExpiresAt = expiresAt
	return r.advance(Approved, at, approver, "", func() {
		r.Approval = &Approval{Approver: approver, InputHash: in.Hash(), ExpiresAt: expiresAt, ApprovedAt: at.UTC().Truncate(time.Second)}
	})
}

// AddApproval records one signed approval of a VERIFIED record by
// approver (the principal that signs the commit writing it), bound to the
// input hash of the target as rendered now with its own expiry. When
// required distinct approvers have signed, the record moves to APPROVED
// and Approval sums them up (every approver, the earliest expiry); before,
// it stays VERIFIED. An approver who already signed is refused.
func (r *Record) AddApproval(approver string, in ApprovalInput, expiresAt, at time.Time, required int) error {
	fail := func(why string) error {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Approved, Reason: why}
	}
	switch {
	case r.State != Verified:
		return fail(fmt.Sprintf("the record is %s: approvals are recorded on a VERIFIED record", r.State))
	case strings.TrimSpace(approver) == "":
		return fail("approver is missing")
	case in.RenderedHash != r.Target.RenderedHash:
		return fail(fmt.Sprintf("the target renders %s, the record proposed %s", in.RenderedHash, r.Target.RenderedHash))
	}
	for _, a := range r.Approvals {
		if a.Approver == approver {
			return fail(fmt.Sprintf("%s already approved: %d distinct approvers must sign", approver, max(required, 1)))
		}
	}
	expiresAt, at = expiresAt.UTC().Truncate(time.Second), at.UTC().Truncate(time.Second)
	in.ExpiresAt = expiresAt
	entry := Approval{Approver: approver, InputHash: in.Hash(), ExpiresAt: expiresAt, ApprovedAt: at}
	if len(r.Approvals)+1 < required {
		c := r.clone()
		r.Approvals = append(r.Approvals, entry)
		if err := r.Validate(); err != nil {
			*r = *c
			return fail(err.Error())
		}
		return nil
	}
	return r.advance(Approved, at, approver, "", func() {
		r.Approvals = append(r.Approvals, entry)
		names, first := make([]string, 0, len(r.Approvals)), entry.ExpiresAt
		for _, a := range r.Approvals {
			names = append(names, a.Approver)
			if a.ExpiresAt.Before(first) {
				first = a.ExpiresAt
			}
		}
		in.ExpiresAt = first
		r.Approval = &Approval{Approver: strings.Join(names, ", "), InputHash: in.Hash(), ExpiresAt: first, ApprovedAt: at}
	})
}

// Reconcile records RECONCILING: the commit that desires the artifact in
// the target.
func (r *Record) Reconcile(desiredRevision string, at time.Time, by string) error {
	if !ValidRevision(desiredRevision) {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Reconciling,
			Reason: fmt.Sprintf("desiredRevision %q is not a full commit id", desiredRevision)}
	}
	return r.advance(Reconciling, at, by, "", func() { r.Reconciling = &Reconciliation{DesiredRevision: desiredRevision} })
}

// Accept records ACCEPTED: the target observed the desired revision (or a
// later commit of the branch rendering the same objects: the caller proves
// it, and the runtime evidence says so) and the live images are the
// artifact.
func (r *Record) Accept(observedRevision, runtimeEvidence string, at time.Time, by string) error {
	fail := func(why string) error {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: Accepted, Reason: why}
	}
	switch {
	case r.Reconciling == nil:
		return fail("not RECONCILING")
	case !ValidSourceRevision(observedRevision):
		return fail(fmt.Sprintf("observed revision %q is neither a full commit id nor an OCI digest", observedRevision))
	case strings.TrimSpace(runtimeEvidence) == "":
		return fail("runtime evidence is missing")
	}
	return r.advance(Accepted, at, by, "", func() {
		r.Accepted = &Acceptance{ObservedRevision: observedRevision, RuntimeEvidence: runtimeEvidence}
	})
}

// Stop moves the record to HALTED (a gate failed after the change was
// applied) or REJECTED (a gate refused it), with the reason.
func (r *Record) Stop(to State, reason string, at time.Time, by string) error {
	if to != Halted && to != Rejected {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: to, Reason: "Stop moves to HALTED or REJECTED only"}
	}
	if strings.TrimSpace(reason) == "" {
		return &TransitionError{ID: r.PromotionID, From: r.State, To: to, Reason: "a reason is required"}
	}
	return r.advance(to, at, by, reason, func() { r.Reason = reason })
}

// CheckUpdate refuses a write of next over prev (nil: no record yet) that
// is not prev itself or prev plus legal transitions: under one attempt key
// the target and artifact never change and history is only appended to;
// another attempt key replaces the record with its own valid history.
func CheckUpdate(prev, next *Record) error {
	if err := next.Validate(); err != nil {
		return err
	}
	if prev == nil {
		// A new record: Validate checked that its history starts as
		// CANDIDATE and only moves forward on evidence.
		return nil
	}
	if prev.Key() != next.Key() {
		// Another attempt replaces the record (its own history starts anew).
		return nil
	}
	if prev.Target != next.Target || !prev.Artifact.Equal(next.Artifact) {
		return &TransitionError{ID: next.PromotionID, From: prev.State, To: next.State,
			Reason: "changed target or artifact under the same attempt key: a change makes a new attempt"}
	}
	if len(next.History) < len(prev.History) {
		return &TransitionError{ID: next.PromotionID, From: prev.State, To: next.State, Reason: "history was shortened"}
	}
	if len(next.Approvals) < len(prev.Approvals) {
		return &TransitionError{ID: next.PromotionID, From: prev.State, To: next.State, Reason: "an approval was removed"}
	}
	for i := range prev.Approvals {
		if prev.Approvals[i] != next.Approvals[i] {
			return &TransitionError{ID: next.PromotionID, From: prev.State, To: next.State, Reason: fmt.Sprintf("approvals[%d] was rewritten", i)}
		}
	}
	for i := range prev.History {
		if !prev.History[i].At.Equal(next.History[i].At) || prev.History[i].State != next.History[i].State {
			return &TransitionError{ID: next.PromotionID, From: prev.State, To: next.State, Reason: fmt.Sprintf("history[%d] was rewritten", i)}
		}
	}
	return nil
}

// Key is the attempt key of a record.
func (r *Record) Key() AttemptKey {
	return AttemptKey{App: r.App, Digest: r.Artifact.Digest, Environment: r.Target.Environment, Attempt: r.Attempt}
}

// AttemptKey identifies one attempt to promote one artifact into one
// environment.
type AttemptKey struct {
	App, Digest, Environment string
	Attempt                  int
}

func (k AttemptKey) short() string {
	h := strings.TrimPrefix(k.Digest, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// ID is the promotionId: <app>-<env>-<digest hex 12>-<attempt>.
func (k AttemptKey) ID() string {
	return fmt.Sprintf("%s%d", k.stem(), k.Attempt)
}

// stem is the promotionId without the attempt number.
func (k AttemptKey) stem() string {
	return fmt.Sprintf("%s-%s-%s-", k.App, k.Environment, k.short())
}

// Branch is the branch of the attempt's change.
func (k AttemptKey) Branch() string {
	return fmt.Sprintf("%s%s/%s/%s-%d", BranchPrefix, k.App, k.Environment, k.short(), k.Attempt)
}

// BranchPrefix starts every promotion branch.
const BranchPrefix = "throughline/promote/"

// BranchGlob matches every attempt branch of app, env and digest.
func BranchGlob(app, env, digest string) string {
	return AttemptKey{App: app, Environment: env, Digest: digest}.branchStem() + "-*"
}

func (k AttemptKey) branchStem() string {
	return fmt.Sprintf("%s%s/%s/%s", BranchPrefix, k.App, k.Environment, k.short())
}

// SameAttempt reports whether a request for target and artifact is the
// attempt r already is: same artifact, same target parameters, renderer and
// cluster. Anything else needs a new attempt (which voids approvals).
func (r *Record) SameAttempt(art Artifact, t Target) bool {
	return r.Artifact.Digest == art.Digest && r.Target == t
}

// ApprovalInput is what an approval is bound to.
type ApprovalInput struct {
	Digest       string
	RenderedHash string
	Path         string
	Cluster      string
	Version      string
	ExpiresAt    time.Time
}

// InputFor is the approval input of r's target as proposed.
func (r *Record) InputFor(version string) ApprovalInput {
	return ApprovalInput{
		Digest: r.Artifact.Digest, RenderedHash: r.Target.RenderedHash, Path: r.Target.Path, Cluster: r.Target.Cluster, Version: version,
	}
}

// Hash is sha256 over the inputs, one "name=value\n" line each in a fixed
// order after a version line, expiresAt as RFC 3339 UTC seconds.
func (in ApprovalInput) Hash() string {
	var b strings.Builder
	b.WriteString("throughline-approval-input/v1\n")
	for _, kv := range [][2]string{
		{"digest", in.Digest}, {"renderedHash", in.RenderedHash}, {"path", in.Path},
		{"cluster", in.Cluster}, {"version", in.Version},
		{"expiresAt", in.ExpiresAt.UTC().Truncate(time.Second).Format(time.RFC3339)},
	} {
		b.WriteString(kv[0] + "=" + strings.ReplaceAll(kv[1], "\n", " ") + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ApprovalVoid says why r's approval does not hold for the target as it is
// now ("" when it holds): expired, the input hash does not match the
// current inputs, or the target moved on (its current render without this
// change is not the one the attempt was proposed against).
func (r *Record) ApprovalVoid(now ApprovalInput, currentBaseHash string, at time.Time) string {
	a := r.Approval
	if a == nil {
		return "no approval"
	}
	if !at.Before(a.ExpiresAt) {
		return fmt.Sprintf("approval by %s expired at %s", a.Approver, a.ExpiresAt.Format(time.RFC3339))
	}
	now.ExpiresAt = a.ExpiresAt
	if h := now.Hash(); h != a.InputHash {
		return fmt.Sprintf("approval input hash %s does not match the current inputs (%s): "+
			"digest %s, rendered hash %s, path %s, cluster %s, throughline %s",
			a.InputHash, h, now.Digest, now.RenderedHash, now.Path, now.Cluster, now.Version)
	}
	if currentBaseHash != "" && currentBaseHash != r.Target.BaseRenderedHash {
		return fmt.Sprintf("the target moved on: it renders %s without this change, the attempt was proposed against %s",
			currentBaseHash, r.Target.BaseRenderedHash)
	}
	return ""
}

// VerifyByPriorAcceptance records the VERIFIED gate of a rollback: the
// target environment itself accepted this digest before, as attempt
// p.PromotionID, for desiredRevision, observing observedRevision (the
// desired commit or a later one rendering the same objects) with the
// target rendered as renderedHash. The claim is checked for form here
// (same app, environment and digest, an earlier attempt, the notifier's
// evidence path); whether Git backs it is for the PR gate, which reads
// p.Commit.
func (r *Record) VerifyByPriorAcceptance(p PriorAcceptance, desiredRevision, observedRevision, renderedHash string, at time.Time, by string) error {
	return r.Verify(VerifiedIn{
		Kind: KindPriorAcceptance, Environment: r.Target.Environment,
		DesiredRevision: desiredRevision, ObservedRevision: observedRevision,
		RenderedHash: renderedHash, RuntimeEvidence: p.Evidence, PriorAcceptance: &p,
	}, at, by)
}

// Entered is r's first history entry into state (ok false when r never
// entered it): when a record was VERIFIED, APPROVED, ACCEPTED, and by whom.
func (r *Record) Entered(state State) (Transition, bool) {
	for _, h := range r.History {
		if h.State == state {
			return h, true
		}
	}
	return Transition{}, false
}
