package notifier

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	"go.opentelemetry.io/otel/attribute"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/tracing"
)

// DefaultResyncInterval is how often serve reconciles every RECONCILING
// record from its controller's own status.
const DefaultResyncInterval = time.Minute

// ResyncController is the reportedBy.controller of evidence the resync
// decided (reportedBy.source stays argocd or flux: the status read is theirs).
const ResyncController = "throughline-notifier-resync"

// Resync outcomes, one per RECONCILING record and pass (the outcome label
// of throughline_notifier_resyncs_total).
const (
	ResyncAccepted     = "accepted"      // evidence ACCEPTED committed
	ResyncHalted       = "halted"        // evidence HALTED committed
	ResyncDuplicate    = "duplicate"     // the evidence was already in Git (a delivery was first)
	ResyncWait         = "wait"          // not decided yet: nothing written
	ResyncNoController = "no-controller" // no Application or Kustomization renders the record's path
	ResyncAmbiguous    = "ambiguous"     // several do: none is picked
	ResyncRefused      = "refused"       // unbound, ambiguous Acceptance, unusable record
	ResyncError        = "error"         // Git or the API server failed: retried next pass
)

var resyncOutcomes = []string{
	ResyncAccepted, ResyncHalted, ResyncDuplicate, ResyncWait, ResyncNoController, ResyncAmbiguous, ResyncRefused, ResyncError,
}

// Resynced is the outcome of resyncing one record (App empty: the pass
// itself failed, Err says why).
type Resynced struct {
	App, Environment, PromotionID string
	// Object is the controller object read ("" when none was found).
	Object string
	// Revision is the revision its status reports.
	Revision string
	Outcome  string
	// Commit is the evidence commit (accepted, halted).
	Commit string
	Reason string
	Err    error
	// TraceID is the trace of the pass (its notifier.resync span), ""
	// when tracing is off.
	TraceID string
}

// Resyncer reconciles every RECONCILING promotion record by itself, on an
// interval: it finds the Argo CD Application or Flux Kustomization whose
// source path is the record's target path, reads the event that
// controller's own status amounts to (the same Event a delivery decodes
// to) and runs it through the Processor, the same decision and the same
// evidence commit as a delivery. Git's compare-and-swap and the sink's
// duplicate detection make a resync and a delivery for the same revision
// commit once. Webhooks only make it faster.
type Resyncer struct {
	Proc   *Processor
	Client dynamic.Interface
	// Prefix is the GitOps root inside the repository the controller
	// objects read ("" or ending in "/").
	Prefix   string
	Interval time.Duration
	// Timeout bounds the processing of one record (default DefaultProcessTimeout).
	Timeout time.Duration
	Metrics *Metrics
	// Log is told of every record resynced and of every failed pass; nil is silent.
	Log func(Resynced)
}

// NeedLeaderElection reports that only the elected leader resyncs (a
// controller-runtime manager.LeaderElectionRunnable): replicas would only
// race each other to the same commit.
func (r *Resyncer) NeedLeaderElection() bool { return true }

// Start resyncs once at once, then every Interval until ctx ends (a
// controller-runtime manager.Runnable). It returns nil when ctx ends.
func (r *Resyncer) Start(ctx context.Context) error {
	if r.Interval <= 0 {
		return nil
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		_ = r.Once(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once runs one pass over the RECONCILING records at the branch tip and
// returns what happened to each; a pass that could not list the records
// or the controller objects ends with a Resynced of outcome error and no
// app (retried next pass).
//
// A pass is a notifier.resync span, each record a notifier.resync.record span under
// it whose evidence commit, when there is one, is the notifier.write span
// a delivery has.
func (r *Resyncer) Once(ctx context.Context) []Resynced {
	ctx, span := tracing.Start(ctx, "notifier.resync")
	out, err := r.pass(ctx)
	span.SetAttributes(attrRecords.Int(len(out)))
	if err != nil {
		r.passDone(err)
		res := Resynced{Outcome: ResyncError, Err: err, TraceID: tracing.TraceID(ctx)}
		r.log(res)
		tracing.End(span, err)
		return append(out, res)
	}
	r.passDone(nil)
	tracing.End(span, nil)
	return out
}

var attrRecords = attribute.Key("throughline.records")

func (r *Resyncer) pass(ctx context.Context) ([]Resynced, error) {
	_, recs, bad, err := r.Proc.Git.Reconciling(ctx)
	if err != nil {
		return nil, err
	}
	var out []Resynced
	for _, f := range slices.Sorted(maps.Keys(bad)) {
		res := Resynced{Outcome: ResyncRefused, Reason: "the promotion record cannot be used", Err: fmt.Errorf("%s: %w", f, bad[f])}
		out = append(out, r.done(res))
	}
	if len(recs) == 0 {
		return out, nil
	}
	ctrls, err := r.controllers(ctx)
	if err != nil {
		return out, err
	}
	for _, rec := range recs {
		out = append(out, r.done(r.traced(ctx, rec, ctrls)))
	}
	return out, nil
}

func (r *Resyncer) done(res Resynced) Resynced {
	if r.Metrics != nil {
		r.Metrics.Resyncs.WithLabelValues(res.Outcome).Inc()
	}
	r.log(res)
	return res
}

func (r *Resyncer) passDone(err error) {
	if r.Metrics == nil {
		return
	}
	if err != nil {
		r.Metrics.ResyncPasses.WithLabelValues("error").Inc()
		return
	}
	r.Metrics.ResyncPasses.WithLabelValues("ok").Inc()
	r.Metrics.ResyncLast.SetToCurrentTime()
}

func (r *Resyncer) log(res Resynced) {
	if r.Log != nil {
		r.Log(res)
	}
}

// controllers lists every Argo CD Application and Flux Kustomization (a
// kind whose CRD is not installed lists none).
func (r *Resyncer) controllers(ctx context.Context) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, gvr := range []schema.GroupVersionResource{ApplicationResource, KustomizationResource} {
		list, err := r.Client.Resource(gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// traced is one in a notifier.resync.record span.
func (r *Resyncer) traced(ctx context.Context, rec *promotion.Record, ctrls []unstructured.Unstructured) Resynced {
	ctx, span := tracing.Start(ctx, "notifier.resync.record", tracing.App.String(rec.App),
		tracing.Environment.String(rec.Target.Environment), tracing.PromotionID.String(rec.PromotionID))
	res := r.one(ctx, rec, ctrls)
	res.TraceID = tracing.TraceID(ctx)
	span.SetAttributes(tracing.Result.String(res.Outcome), attribute.String("throughline.object", res.Object),
		tracing.Revision.String(res.Revision), attribute.String("throughline.commit", res.Commit))
	tracing.End(span, res.Err)
	return res
}

// one resyncs one record.
func (r *Resyncer) one(ctx context.Context, rec *promotion.Record, ctrls []unstructured.Unstructured) Resynced {
	env := rec.Target.Environment
	res := Resynced{App: rec.App, Environment: env, PromotionID: rec.PromotionID}
	found := controllersOf(rec, ctrls, r.Prefix)
	switch len(found) {
	case 0:
		res.Outcome, res.Reason = ResyncNoController, "no Argo CD Application or Flux Kustomization renders "+rec.Target.Path
		return res
	case 1:
	default:
		names := make([]string, len(found))
		for i := range found {
			names[i] = objectName(found[i])
		}
		res.Outcome = ResyncAmbiguous
		res.Reason = fmt.Sprintf("%s all render %s: none is picked", strings.Join(names, ", "), rec.Target.Path)
		return res
	}
	u := found[0]
	res.Object = objectName(u)
	ev, why := StatusEvent(u, rec.App, env)
	if why != "" {
		res.Outcome, res.Reason = ResyncWait, why
		return res
	}
	res.Revision = ev.Revision
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultProcessTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := r.Proc.Process(ctx, ev)
	res.Outcome, res.Reason, res.Err = r.outcome(w, err)
	if err == nil && !w.Duplicate {
		res.Commit = w.Commit
	}
	return res
}

// outcome classifies a Process result as the handler does a delivery's,
// counting evidence written and failures in the same metrics.
func (r *Resyncer) outcome(w *evidence.Written, err error) (string, string, error) {
	var wait *WaitError
	var recErr *promotion.RecordError
	switch {
	case err == nil && w.Duplicate:
		return ResyncDuplicate, "", nil
	case err == nil:
		e := w.Evidence
		if r.Metrics != nil {
			r.Metrics.Written.WithLabelValues(string(e.Decision)).Inc()
		}
		if e.Decision == promotion.Halted {
			if r.Metrics != nil {
				r.Metrics.Failures.WithLabelValues(e.Class).Inc()
			}
			return ResyncHalted, e.Reason, nil
		}
		return ResyncAccepted, e.Reason, nil
	case errors.As(err, &wait):
		return ResyncWait, wait.Reason, nil
	case errors.Is(err, ErrUnbound), errors.Is(err, ErrAmbiguous), errors.Is(err, evidence.ErrUnknownApp),
		errors.Is(err, evidence.ErrNotApplicable):
		return ResyncRefused, err.Error(), nil
	case errors.As(err, &recErr), errors.Is(err, exitcode.ErrInvalid):
		if r.Metrics != nil {
			r.Metrics.Failures.WithLabelValues(ClassSource).Inc()
		}
		return ResyncRefused, "the promotion record cannot be used", err
	}
	if r.Metrics != nil {
		r.Metrics.Failures.WithLabelValues(ClassInternal).Inc()
	}
	return ResyncError, "evidence not written; retried next pass", err
}

func objectName(u unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// controllersOf returns the controller objects whose source path (as
// environment.ControllerOf reads it, the delivery's registry check) is
// rec's target path; an object labelled throughline.dev/app or
// throughline.dev/environment for another app or environment is not one.
func controllersOf(rec *promotion.Record, ctrls []unstructured.Unstructured, prefix string) []unstructured.Unstructured {
	want := path.Clean(strings.TrimPrefix(rec.Target.Path, "./"))
	var out []unstructured.Unstructured
	for _, u := range ctrls {
		l := u.GetLabels()
		if a := l[v1alpha1.LabelApp]; a != "" && a != rec.App {
			continue
		}
		if e := l[v1alpha1.LabelEnvironment]; e != "" && e != rec.Target.Environment {
			continue
		}
		if slices.Contains(environment.ControllerOf(u.Object, prefix).Paths, want) {
			out = append(out, u)
		}
	}
	return out
}

// StatusEvent is the Event a controller object's own status amounts to,
// built as the delivery it would send is decoded (argoCDEvent,
// fluxEvent), for app in env; or why there is none yet (a sync in
// progress, a Kustomization not Ready, a status older than its spec):
//   - an Argo CD Application whose last operation Succeeded (the shipped
//     on-sync-succeeded / on-deployed triggers), Failed or Error (a sync
//     that applied nothing: the controller's failure; also one still
//     Running that retries a failed sync, operationState.retryCount > 0) or whose health is
//     Degraded (on-health-degraded): status.operationState.syncResult.revision,
//     else status.sync.revision, with status.sync (revision and status),
//     its phase, health and operation message;
//   - a Flux Kustomization whose Ready condition is for its generation:
//     True is ReconciliationSucceeded at status.lastAppliedRevision
//     (main@sha1:<commit>); False for a failed reconciliation or health
//     check is an error event at status.lastAttemptedRevision.
func StatusEvent(u unstructured.Unstructured, app, env string) (Event, string) {
	var ev Event
	var err error
	switch u.GetKind() {
	case KindApplication:
		ev, err = applicationEvent(u, app, env)
	case KindKustomization:
		ev, err = kustomizationEvent(u, app, env)
	default:
		return Event{}, fmt.Sprintf("%s is neither an Application nor a Kustomization", objectName(u))
	}
	if err != nil {
		return Event{}, err.Error()
	}
	ev.Controller, ev.Instance = ResyncController, ""
	return ev, ""
}

func applicationEvent(u unstructured.Unstructured, app, env string) (Event, error) {
	str := func(f ...string) string { s, _, _ := unstructured.NestedString(u.Object, f...); return s }
	p := ArgoCDPayload{
		Trigger: "resync", Application: u.GetName(), Namespace: u.GetNamespace(), App: app, Environment: env,
		Revision:     str("status", "operationState", "syncResult", "revision"),
		SyncRevision: str("status", "sync", "revision"), SyncStatus: str("status", "sync", "status"),
		Phase: str("status", "operationState", "phase"), Health: str("status", "health", "status"),
		Message: str("status", "operationState", "message"),
	}
	p.RetryCount, _, _ = unstructured.NestedInt64(u.Object, "status", "operationState", "retryCount")
	if !slices.Contains([]string{"Succeeded", "Failed", "Error"}, p.Phase) && p.Health != "Degraded" && !p.retrying() {
		return Event{}, fmt.Errorf("%s: operation %q, health %q: neither finished nor Degraded yet", objectName(u), p.Phase, p.Health)
	}
	return argoCDEvent(p)
}

func kustomizationEvent(u unstructured.Unstructured, app, env string) (Event, error) {
	var st struct {
		ObservedGeneration  int64  `json:"observedGeneration"`
		LastAppliedRevision string `json:"lastAppliedRevision"`
		// LastAppliedOriginRevision is the applied OCI artifact's revision
		// annotation (the event's originRevision).
		LastAppliedOriginRevision string             `json:"lastAppliedOriginRevision"`
		LastAttemptedRevision     string             `json:"lastAttemptedRevision"`
		Conditions                []metav1.Condition `json:"conditions"`
	}
	if m, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
			return Event{}, fmt.Errorf("%s: status: %w", objectName(u), err)
		}
	}
	ready := meta.FindStatusCondition(st.Conditions, "Ready")
	switch {
	case ready == nil:
		return Event{}, fmt.Errorf("%s has no Ready condition yet", objectName(u))
	case st.ObservedGeneration < u.GetGeneration() || ready.ObservedGeneration < u.GetGeneration():
		return Event{}, fmt.Errorf("%s: status is for generation %d, the spec is at %d", objectName(u), st.ObservedGeneration, u.GetGeneration())
	}
	fe := eventv1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: KindKustomization, Namespace: u.GetNamespace(), Name: u.GetName()},
		Severity:       eventv1.EventSeverityInfo, Reason: ready.Reason, Message: ready.Message,
		Metadata:            map[string]string{FluxMetaApp: app, FluxMetaEnvironment: env},
		ReportingController: ResyncController,
	}
	switch {
	case ready.Status == metav1.ConditionTrue:
		fe.Reason, fe.Metadata[FluxMetaRevision] = "ReconciliationSucceeded", st.LastAppliedRevision
		if st.LastAppliedOriginRevision != "" {
			fe.Metadata[FluxMetaOriginRevision] = st.LastAppliedOriginRevision
		}
	case ready.Status == metav1.ConditionFalse && slices.Contains([]string{"ReconciliationFailed", "HealthCheckFailed", "BuildFailed"}, ready.Reason):
		fe.Severity, fe.Metadata[FluxMetaRevision] = eventv1.EventSeverityError, st.LastAttemptedRevision
	default:
		return Event{}, fmt.Errorf("%s: Ready %s (%s): not reconciled yet", objectName(u), ready.Status, ready.Reason)
	}
	return fluxEvent(fe)
}
