package notifier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/tracing"
)

// Failure classes, as counted in metrics and written in evidence.
const (
	ClassSource = "source" // wrong revision, unusable promotion record
	ClassRender = "render" // the live render is not the one proposed
	ClassLive   = "live"   // image mismatch, degraded application
	// ClassRuntime is a runtime check that failed (evidence.ClassRuntime).
	ClassRuntime = evidence.ClassRuntime
	// ClassInternal counts, in the failure metric only, what kept the
	// notifier from deciding: Git, the API server or the forge unreachable,
	// an internal error. It is never written in evidence.
	ClassInternal = "internal"
)

// Live is an Acceptance as read from the API server.
type Live struct {
	Namespace, Name string
	Generation      int64
	// RenderedHash is spec.renderedHash.
	RenderedHash string
	Status       v1alpha1.AcceptanceStatus
	// Checks is spec.checks: the runtime checks the Acceptance declares.
	Checks *v1alpha1.RuntimeChecks
}

// ErrNoAcceptance is wrapped when no Acceptance exists for an app in the
// namespace its controller object binds.
var ErrNoAcceptance = errors.New("no Acceptance object")

// ErrAmbiguous is wrapped when more than one Acceptance of an app matches
// in the namespace its controller object binds: the delivery is refused
// (409), nothing is written, none of them is picked.
var ErrAmbiguous = errors.New("ambiguous Acceptance")

// ErrUnbound is wrapped when the delivery's controller object binds no
// namespace the Acceptance could be read from (an Application without
// spec.destination.namespace, a kind other than Application or
// Kustomization, a namespace outside the notifier's): refused (409),
// nothing is written.
var ErrUnbound = errors.New("no namespace bound")

// Acceptances reads the Acceptance of an event's app in its environment,
// in the namespace the event's controller object (Event.Ref) binds.
type Acceptances interface {
	Get(ctx context.Context, ev Event) (*Live, error)
}

// WaitError is a delivery that cannot be decided yet: the rollout is in
// progress, the controller has not reached the desired commit, or the
// controller reports a failure of its own. Nothing is written to Git; the
// sender is told to retry (503 with Retry-After).
type WaitError struct {
	Reason string
	// Waiting is set for a controller-side failure: the promotion's
	// "waiting" word (decision RECONCILING), posted as a pending commit
	// status when it changes.
	Waiting *evidence.Record
}

func (e *WaitError) Error() string { return "not decided yet: " + e.Reason }

// Processor turns events into evidence.
type Processor struct {
	Git  *evidence.GitSink
	Live Acceptances
	// Status, when set, receives every new decision (not duplicates); it is
	// called after the Git write, never before. It also receives a
	// controller-side wait (decision RECONCILING, nothing written) when its
	// reason changes.
	Status func(ev *evidence.Record)
	Now    func() time.Time
	// Registry, when set, is the environment registry whose source kinds
	// settle an event's revision (resolveRevision): an OCI environment's
	// revisions are artifact digests, a Git one's commit ids.
	Registry RegistryFunc
	// ResyncDecidesDeadline, set when the resync runs (serve's default),
	// leaves the reconcileDeadline HALT of a controller that has not
	// applied the desired revision to the resync, which reads the
	// controller object's own status: a delivery can be a sender's late
	// retry of an old event (notification-controller retries a 503) and
	// would HALT naming a revision, or a failure, the controller has left.
	// Such a delivery waits.
	ResyncDecidesDeadline bool
	// Summaries, when set, publishes the signed verification summary of
	// every new acceptance, after its commit and never holding it up.
	Summaries *Summaries

	waitMu sync.Mutex
	waited map[string]string // app/env/promotionId -> the last waiting reason posted
}

// Result is the outcome of processing one event.
type Result struct {
	Written *evidence.Written
}

// Process decides an event and writes its evidence. The error is a
// *WaitError, wraps evidence.ErrUnknownApp or evidence.ErrNotApplicable,
// or is a failure to read or write (the sender should retry).
func (p *Processor) Process(ctx context.Context, ev Event) (*evidence.Written, error) {
	kind, err := p.sourceKind(ctx, ev)
	if err != nil {
		return nil, err
	}
	resolveRevision(&ev, kind)
	decide := func(ctx context.Context, rec *promotion.Record, tip string) (*evidence.Record, error) {
		ctx, span := tracing.Start(ctx, "notifier.decide", tracing.PromotionID.String(rec.PromotionID),
			tracing.Digest.String(rec.Artifact.Digest), attribute.String("throughline.tip", tip))
		out, err := p.decide(ctx, ev, rec, tip)
		if out != nil {
			span.SetAttributes(attribute.String("throughline.decision", string(out.Decision)), attribute.String("throughline.class", out.Class))
		}
		spanErr := err
		var wait *WaitError
		if errors.As(err, &wait) {
			span.SetAttributes(attribute.String("throughline.waiting", wait.Reason))
			spanErr = nil // waiting is an outcome, not a failure
		}
		tracing.End(span, spanErr)
		return out, err
	}
	wctx, span := tracing.Start(ctx, "notifier.write", tracing.App.String(ev.App), tracing.Environment.String(ev.Environment),
		tracing.Revision.String(ev.Revision))
	w, err := p.Git.Write(wctx, ev.App, ev.Environment, ev.Revision, decide)
	if err == nil {
		span.SetAttributes(attribute.String("throughline.commit", w.Commit), attribute.Bool("throughline.duplicate", w.Duplicate))
	}
	var wait *WaitError
	tracing.End(span, func() error {
		if errors.As(err, &wait) {
			return nil
		}
		return err
	}())
	if errors.As(err, &wait) && wait.Waiting != nil && p.Status != nil && p.waitChanged(wait.Waiting) {
		p.status(ctx, wait.Waiting)
	}
	if err != nil {
		return nil, err
	}
	if !w.Duplicate && p.Status != nil {
		p.status(ctx, w.Evidence)
	}
	if !w.Duplicate && w.Evidence.Decision == promotion.Accepted && p.Summaries != nil {
		p.Summaries.start(ctx, p, w)
	}
	return w, nil
}

// status posts ev through p.Status in its own span.
func (p *Processor) status(ctx context.Context, ev *evidence.Record) {
	_, span := tracing.Start(ctx, "notifier.status", tracing.PromotionID.String(ev.PromotionID),
		attribute.String("throughline.decision", string(ev.Decision)))
	p.Status(ev)
	span.End()
}

func (p *Processor) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Processor) decide(ctx context.Context, ev Event, rec *promotion.Record, tip string) (*evidence.Record, error) {
	desired := rec.Reconciling.DesiredRevision
	out := &evidence.Record{
		ObservedRevision: ev.Revision, Time: p.now(),
		ReportedBy: evidence.Reporter{Source: ev.Source, Controller: ev.Controller, Instance: ev.Instance, Object: ev.Object, Reason: ev.Reason},
	}
	halt := func(class, format string, args ...any) (*evidence.Record, error) {
		out.Decision, out.Class, out.Reason = promotion.Halted, class, fmt.Sprintf(format, args...)
		return out, nil
	}
	if why := sourceMismatch(ev, rec); why != "" {
		return halt(ClassSource, "%s", why)
	}
	// The observed revision has caught up when it is the desired commit or
	// a later commit of the branch: in a busy repository the controller
	// syncs whatever is newest (another app's promotion, this record's own
	// commits). A later commit counts only if it renders exactly the
	// approved objects, checked against the Acceptance below.
	rel, err := evidence.Relate(ctx, p.Git.IsAncestor, desired, ev.Revision)
	if err != nil {
		return nil, err
	}
	earlier := fmt.Sprintf("the controller observed %s, an ancestor of the desired %s", ev.Revision, desired)
	if rec.IsOCI() {
		out.ObservedCommit = ev.Origin
		var why string
		if rel, earlier, why, err = p.relateOCI(ctx, ev, rec); err != nil || why != "" {
			if err != nil {
				return nil, err
			}
			return halt(ClassSource, "%s", why)
		}
	}
	var unchanged string
	if rel == evidence.Earlier {
		if rel, unchanged, err = p.renderUnchanged(ctx, &ev, rec); err != nil {
			return nil, err
		}
		out.ObservedRevision = ev.Revision
	}
	switch rel {
	case evidence.Earlier:
		// Stuck on an old revision: halted once the environment's
		// reconcileDeadline has passed, else waited for. When the
		// controller says why (a dry-run denied by admission, a failed
		// sync), the wait and the halt name its message.
		if ev.Degraded {
			out.Reason = fmt.Sprintf("still at %s, desired %s", ev.Revision, desired)
			return p.controllerFailed(ctx, tip, ev, rec, out)
		}
		why, err := p.deadlinePassed(ctx, tip, ev, rec)
		if err != nil {
			return nil, err
		}
		if why != "" && p.leavesDeadlineToResync(ev) {
			return nil, &WaitError{Reason: earlier + "; the reconcileDeadline has passed: the resync decides on the controller's own status"}
		}
		if why != "" {
			return halt(ClassSource, "%s", why)
		}
		return nil, &WaitError{Reason: earlier}
	case evidence.Unrelated:
		return halt(ClassSource, "wrong revision: the controller observed %s, neither the desired commit %s nor a later commit of the branch",
			ev.Revision, desired)
	}
	later := rel == evidence.Later
	live, err := p.Live.Get(ctx, ev)
	if errors.Is(err, ErrNoAcceptance) {
		if ev.Degraded {
			return p.controllerFailed(ctx, tip, ev, rec, out)
		}
		return nil, &WaitError{Reason: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	out.Acceptance = live.Namespace + "/" + live.Name
	out.RenderedHash = live.RenderedHash
	out.Pods = pods(live.Status)
	runtimeEvidence(out, live)
	if live.Status.VerifiedAt != nil {
		t := live.Status.VerifiedAt.UTC()
		out.VerifiedAt = &t
	}
	why, unapplied, err := p.committedAcceptance(ctx, ev, rec, live)
	if err != nil {
		return nil, err
	}
	// A controller that reports it did not apply the observed revision
	// (an admission denial of its dry-run, a schema or RBAC error) leaves
	// an earlier Acceptance live: its failure, waited for until the
	// reconcileDeadline. Only what was applied can contradict the record
	// (the committed Acceptance, an applied render other than the approved).
	stale := unapplied || rec.Target.RenderedHash != "" && live.RenderedHash != rec.Target.RenderedHash
	if ev.ApplyFailed && stale && (why == "" || unapplied) {
		out.Reason = fmt.Sprintf("the live Acceptance %s still declares %s, not the approved %s: nothing applied",
			out.Acceptance, orNone(live.RenderedHash), rec.Target.RenderedHash)
		return p.controllerFailed(ctx, tip, ev, rec, out)
	}
	if why != "" {
		return halt(ClassRender, "%s", why)
	}
	if rec.Target.RenderedHash != "" && live.RenderedHash != "" && live.RenderedHash != rec.Target.RenderedHash {
		if later {
			return halt(ClassRender, "rendered hash mismatch: the controller observed %s, later than the desired %s, "+
				"whose Acceptance declares %s; the promotion proposed %s", ev.Revision, desired, live.RenderedHash, rec.Target.RenderedHash)
		}
		return halt(ClassRender, "rendered hash mismatch: the Acceptance declares %s, the promotion proposed %s",
			live.RenderedHash, rec.Target.RenderedHash)
	}
	if later {
		if live.RenderedHash == "" || rec.Target.RenderedHash == "" {
			return halt(ClassRender, "cannot tell whether %s, later than the desired %s, renders the approved objects: "+
				"the Acceptance (%q) or the record (%q) has no rendered hash", ev.Revision, desired, live.RenderedHash, rec.Target.RenderedHash)
		}
		out.Reason = fmt.Sprintf("observed %s, later than the desired %s, renders the approved objects (%s)", ev.Revision, desired, live.RenderedHash)
	}
	if unchanged != "" {
		out.Reason = strings.TrimPrefix(out.Reason+"; "+unchanged, "; ")
	}
	verdict, ready := Judge(live)
	switch {
	case verdict == VerdictHalt && ready.Reason == v1alpha1.ReasonCheckFailed:
		return halt(evidence.ClassRuntime, "runtime check failed: Acceptance %s: %s", out.Acceptance, failedChecks(out))
	case verdict == VerdictHalt && ready.Reason == v1alpha1.ReasonCheckUnverifiable:
		return halt(evidence.ClassRuntime, "runtime check not measurable: Acceptance %s is %s: %s", out.Acceptance, ready.Reason, ready.Message)
	case verdict == VerdictHalt && ready.Reason == v1alpha1.ReasonDeadlineExceeded:
		return halt(ClassLive, "rollout deadline exceeded: Acceptance %s is %s: %s", out.Acceptance, ready.Reason, ready.Message)
	case verdict == VerdictHalt:
		return halt(ClassLive, "image mismatch: Acceptance %s is %s: %s", out.Acceptance, ready.Reason, ready.Message)
	case ev.Degraded:
		// The Acceptance does not condemn the artifact: the controller's
		// failure (an apply or dry-run error, a health check timing out,
		// RBAC) is waited for until the environment's deadline.
		return p.controllerFailed(ctx, tip, ev, rec, out)
	case verdict == VerdictAccept:
		out.Decision = promotion.Accepted
		return out, nil
	case ready == nil || !live.current():
		return nil, &WaitError{Reason: fmt.Sprintf("Acceptance %s not verified for generation %d yet", out.Acceptance, live.Generation)}
	default:
		return nil, &WaitError{Reason: fmt.Sprintf("Acceptance %s is %s: %s", out.Acceptance, ready.Reason, ready.Message)}
	}
}

// Verdict is what an Acceptance's status alone says about a promotion.
type Verdict int

// The verdicts, and the Argo CD health the Lua script in
// deploy/argocd/argocd-cm-health.yaml gives the same status (a table test
// runs both).
const (
	VerdictWait   Verdict = iota // Progressing: not decided yet (503)
	VerdictAccept                // Healthy: ACCEPTED
	VerdictHalt                  // Degraded: HALTED
)

func (v Verdict) String() string {
	switch v {
	case VerdictAccept:
		return "accept"
	case VerdictHalt:
		return "halt"
	}
	return "wait"
}

// Judge decides from an Acceptance's status: wait unless the status is for
// the current generation and rendered hash and has a Ready condition (the
// first one); then halt on reason ImageMismatch, Invalid, CheckFailed,
// CheckUnverifiable (a runtime check not measurable within its deadline)
// or DeadlineExceeded whatever its status, accept on Ready=True with
// reason Verified (after the soak of any runtime checks), else wait (a
// rollout in progress, the soak going on, an unverifiable digest or check
// before its deadline, a workload not found yet: the verifier reports these
// as pending). It returns the Ready condition it read.
func Judge(live *Live) (Verdict, *metav1.Condition) {
	ready := meta.FindStatusCondition(live.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready == nil || !live.current():
		return VerdictWait, ready
	case ready.Reason == v1alpha1.ReasonImageMismatch || ready.Reason == v1alpha1.ReasonInvalid ||
		ready.Reason == v1alpha1.ReasonCheckFailed || ready.Reason == v1alpha1.ReasonCheckUnverifiable ||
		ready.Reason == v1alpha1.ReasonDeadlineExceeded:
		return VerdictHalt, ready
	case ready.Status == metav1.ConditionTrue && ready.Reason == v1alpha1.ReasonVerified:
		return VerdictAccept, ready
	}
	return VerdictWait, ready
}

// current reports whether the status is the verifier's word on this
// generation and rendered hash.
func (l *Live) current() bool {
	return l.Status.ObservedGeneration >= l.Generation && l.Status.RenderedHash == l.RenderedHash
}

func pods(s v1alpha1.AcceptanceStatus) []evidence.Pod {
	var out []evidence.Pod
	for _, w := range s.Workloads {
		for _, c := range w.Containers {
			for _, o := range c.Observed {
				out = append(out, evidence.Pod{
					Workload: w.Kind + "/" + w.Namespace + "/" + w.Name, Container: c.Name, Pod: o.Pod, Pods: o.Pods,
					Declared: c.Digest, ImageID: o.ImageID, Outcome: string(o.Outcome), Match: string(o.Match), Platform: o.Platform,
				})
			}
		}
	}
	return out
}
