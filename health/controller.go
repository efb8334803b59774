package health

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/tracing"
)

// IndexWorkloadNamespace is the cache index of Acceptances by the
// namespaces of the workloads they name.
const IndexWorkloadNamespace = "throughline.dev/workload-namespace"

// Requeue delays of the Reconciler's defaults.
const (
	DefaultResync      = 10 * time.Minute
	DefaultPendingWait = 30 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
)

// Reconciler is the Acceptance controller: it verifies each Acceptance with
// a Verifier and writes its status. It does not log; OnResult, when set, is
// told every outcome.
type Reconciler struct {
	Client   client.Client
	Verifier *Verifier
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Resync re-verifies a verified or mismatched Acceptance after this long
	// (default DefaultResync); PendingWait re-verifies a pending one (the
	// watches usually trigger sooner).
	Resync, PendingWait time.Duration
	// MinBackoff and MaxBackoff bound the exponential requeue of an
	// Unverifiable Acceptance (registry unreachable).
	MinBackoff, MaxBackoff time.Duration
	// Checks evaluates the runtime checks (nil: every check is
	// Unverifiable).
	Checks CheckEvaluator
	// Committed, when set, compares each Acceptance's checks with the
	// committed ones before any runs (nil: they run, an HTTP probe only in
	// the Acceptance's own namespace).
	Committed CommittedChecks
	// OnResult is called after each reconcile with the report (nil on error).
	OnResult func(ctx context.Context, key types.NamespacedName, rep *Report, requeue time.Duration, err error)

	mu       sync.Mutex
	failures map[types.NamespacedName]int
}

// NewAcceptance returns an empty unstructured Acceptance.
func NewAcceptance() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.AcceptanceGVK())
	return u
}

// workloadNamespaces is the index function of IndexWorkloadNamespace.
func workloadNamespaces(obj client.Object) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	set := map[string]bool{u.GetNamespace(): true}
	ws, _, _ := unstructured.NestedSlice(u.Object, "spec", "workloads")
	for _, w := range ws {
		if m, ok := w.(map[string]any); ok {
			if ns, _ := m["namespace"].(string); ns != "" {
				set[ns] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	return out
}

// SetupWithManager registers the controller: it watches Acceptances (spec
// changes), and Pods, Deployments, ReplicaSets, StatefulSets, DaemonSets and
// Jobs, each mapped to the Acceptances naming workloads in its namespace.
// Argo Rollouts are read uncached and re-checked on a timer.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, NewAcceptance(), IndexWorkloadNamespace, workloadNamespaces); err != nil {
		return fmt.Errorf("indexing Acceptances by workload namespace: %w", err)
	}
	enqueue := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(v1alpha1.AcceptanceListGVK())
		if err := r.Client.List(ctx, list, client.MatchingFields{IndexWorkloadNamespace: obj.GetNamespace()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, a := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.GetNamespace(), Name: a.GetName()}})
		}
		return reqs
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("acceptance").
		For(NewAcceptance(), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	for _, obj := range []client.Object{
		&corev1.Pod{}, &appsv1.Deployment{}, &appsv1.ReplicaSet{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}, &batchv1.Job{},
	} {
		b = b.Watches(obj, enqueue)
	}
	return b.Complete(r)
}

// Reconcile verifies one Acceptance and writes its status.
//
// Each reconcile is a health.verify span (the live verification pass of
// one Acceptance: its app, environment, outcome and reason) with a child
// span for the image verification (health.images) and one per runtime
// check evaluated (health.check); OnResult is called inside it, so the
// caller's log line can name its trace.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx, span := tracing.Start(ctx, "health.verify", attrAcceptance.String(req.String()))
	rep, requeue, err := r.reconcile(ctx, req.NamespacedName)
	if rep != nil {
		span.SetAttributes(tracing.Result.String(string(rep.Outcome)), attrReason.String(rep.Reason))
	}
	if r.OnResult != nil {
		r.OnResult(ctx, req.NamespacedName, rep, requeue, err)
	}
	tracing.End(span, err)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// Attributes of the health spans.
var (
	attrAcceptance = attribute.Key("throughline.acceptance")
	attrReason     = attribute.Key("throughline.reason")
	attrWorkloads  = attribute.Key("throughline.workloads")
	attrPods       = attribute.Key("throughline.pods")
	attrCheck      = attribute.Key("throughline.check")
	attrValue      = attribute.Key("throughline.value")
)

func (r *Reconciler) reconcile(ctx context.Context, key types.NamespacedName) (*Report, time.Duration, error) {
	acc := NewAcceptance()
	if err := r.Client.Get(ctx, key, acc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("reading Acceptance %s: %w", key, err)
	}
	if acc.GetDeletionTimestamp() != nil {
		return nil, 0, nil
	}
	rep, err := r.verifyImages(ctx, acc)
	if err != nil {
		return nil, 0, err
	}
	trace.SpanFromContext(ctx).SetAttributes(tracing.App.String(rep.App), tracing.Environment.String(rep.Environment))
	prev, err := ReadStatus(acc)
	if err != nil {
		prev = v1alpha1.AcceptanceStatus{} // a status we cannot read is replaced
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	t := now()
	due := r.applyRuntime(ctx, acc, rep, prev, t)
	changed, err := SetStatus(acc, NewStatus(rep, prev, t))
	if err != nil {
		return rep, 0, err
	}
	if changed {
		if err := r.Client.Status().Update(ctx, acc); err != nil {
			return rep, 0, fmt.Errorf("writing status of Acceptance %s: %w", key, err)
		}
	}
	requeue := r.requeue(key, rep.Outcome, rep.Reason)
	if due > 0 && (requeue == 0 || due < requeue) {
		requeue = due
	}
	return rep, requeue, nil
}

// verifyImages is Verifier.Verify in a health.images span.
func (r *Reconciler) verifyImages(ctx context.Context, acc *unstructured.Unstructured) (*Report, error) {
	ctx, span := tracing.Start(ctx, "health.images")
	rep, err := r.Verifier.Verify(ctx, acc)
	if rep != nil {
		pods := 0
		for _, w := range rep.Workloads {
			pods += w.Pods
		}
		span.SetAttributes(tracing.Result.String(string(rep.Outcome)), attrReason.String(rep.Reason),
			tracing.Revision.String(rep.RenderedHash), attrWorkloads.Int(len(rep.Workloads)), attrPods.Int(pods))
	}
	tracing.End(span, err)
	return rep, err
}

func (r *Reconciler) requeue(key types.NamespacedName, o Outcome, reason string) time.Duration {
	resync, pending := orDefault(r.Resync, DefaultResync), orDefault(r.PendingWait, DefaultPendingWait)
	minB, maxB := orDefault(r.MinBackoff, DefaultMinBackoff), orDefault(r.MaxBackoff, DefaultMaxBackoff)
	if o != Unverifiable {
		r.forget(key)
		switch {
		case reason == v1alpha1.ReasonInvalid:
			return 0 // only a new spec (a watch event) changes it
		case o == Pending:
			return pending
		}
		return resync
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = map[types.NamespacedName]int{}
	}
	n := r.failures[key]
	r.failures[key] = n + 1
	d := minB
	for i := 0; i < n && d < maxB; i++ {
		d *= 2
	}
	return min(d, maxB)
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.failures, key)
	r.mu.Unlock()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
