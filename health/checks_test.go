package health

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/runtimecheck"
)

// scripted plays the evaluation of checks: each check answers the next
// result of its script (the real evaluations are runtimecheck's tests);
// calls counts them.
type scripted struct {
	mu     sync.Mutex
	script map[string][]runtimecheck.Result
	calls  map[string]int
}

func (s *scripted) Evaluate(_ context.Context, _ runtimecheck.Owner, c v1alpha1.RuntimeCheck) runtimecheck.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	rs := s.script[c.Name]
	r := rs[min(s.calls[c.Name], len(rs)-1)]
	s.calls[c.Name]++
	return r
}

func pass(v string) runtimecheck.Result {
	return runtimecheck.Result{Verdict: v1alpha1.CheckPassed, Value: v}
}
func fail(v string) runtimecheck.Result {
	return runtimecheck.Result{Verdict: v1alpha1.CheckFailed, Value: v, Message: "over"}
}

// checkLab is an Acceptance without workloads (its images verify at once)
// declaring checks, in a fake API server, and a Reconciler on a clock.
type checkLab struct {
	t   *testing.T
	c   client.Client
	r   *Reconciler
	now time.Time
	key types.NamespacedName
}

func newCheckLab(t *testing.T, spec map[string]any, ev CheckEvaluator) *checkLab {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	acc := testAcceptance("checkout", spec)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(acc).WithStatusSubresource(acc).Build()
	l := &checkLab{t: t, c: c, now: time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC), key: types.NamespacedName{Namespace: "shop", Name: "checkout"}}
	l.r = &Reconciler{Client: c, Verifier: &Verifier{Client: c}, Checks: ev, Now: func() time.Time { return l.now }}
	return l
}

// at reconciles at t0+d and returns the status, the requeue and the
// Acceptance.
func (l *checkLab) at(d time.Duration) (v1alpha1.AcceptanceStatus, time.Duration, *unstructured.Unstructured) {
	l.t.Helper()
	l.now = time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC).Add(d)
	res, err := l.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: l.key})
	if err != nil {
		l.t.Fatal(err)
	}
	acc := NewAcceptance()
	if err := l.c.Get(context.Background(), l.key, acc); err != nil {
		l.t.Fatal(err)
	}
	st, err := ReadStatus(acc)
	if err != nil {
		l.t.Fatal(err)
	}
	return st, res.RequeueAfter, acc
}

func checksSpec(soak string, checks ...map[string]any) map[string]any {
	cs := make([]any, 0, len(checks))
	for _, c := range checks {
		cs = append(cs, c)
	}
	return map[string]any{"app": "checkout", "renderedHash": dg('1'), "objectCount": int64(1), "workloads": []any{},
		"checks": map[string]any{"soak": soak, "checks": cs}}
}

func prom(name, interval string, threshold int64) map[string]any {
	return map[string]any{"name": name, "interval": interval, "failureThreshold": threshold,
		"prometheus": map[string]any{"query": "q", "op": "<", "threshold": 0.05}}
}

// expect checks Ready (status, reason), Reconciling and Stalled, and what
// kstatus makes of it.
func expect(t *testing.T, when string, st v1alpha1.AcceptanceStatus, acc *unstructured.Unstructured, ready metav1.ConditionStatus, reason string,
	ks status.Status,
) {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != ready || c.Reason != reason {
		t.Fatalf("%s: Ready = %+v; want %s %s", when, c, ready, reason)
	}
	res, err := status.Compute(acc)
	if err != nil || res.Status != ks {
		t.Fatalf("%s: kstatus %v (%v); want %s", when, res, err, ks)
	}
}

// TestSoakGreen: Ready stays Unknown (Soaking, Reconciling) until the soak is
// over with every check passed; each check runs on its own interval (no
// evaluation between), the requeue is the next due check; after the soak
// the checks stop and Ready is True.
func TestSoakGreen(t *testing.T) {
	t.Parallel()
	ev := &scripted{script: map[string][]runtimecheck.Result{"errors": {pass("0.01")}, "latency": {pass("0.2")}}}
	l := newCheckLab(t, checksSpec("1m", prom("errors", "10s", 3), prom("latency", "30s", 1)), ev)
	st, requeue, acc := l.at(0)
	expect(t, "t0", st, acc, metav1.ConditionUnknown, v1alpha1.ReasonSoaking, status.InProgressStatus)
	if st.SoakStartedAt == nil || len(st.Checks) != 2 || st.Checks[0].Value != "0.01" || requeue != 10*time.Second || st.VerifiedAt != nil {
		t.Fatalf("t0: %+v requeue %s", st, requeue)
	}
	l.at(5 * time.Second)
	if ev.calls["errors"] != 1 || ev.calls["latency"] != 1 {
		t.Fatalf("evaluated before due: %v", ev.calls)
	}
	_, requeue, _ = l.at(10 * time.Second)
	if ev.calls["errors"] != 2 || ev.calls["latency"] != 1 || requeue != 10*time.Second {
		t.Fatalf("t0+10s: calls %v requeue %s", ev.calls, requeue)
	}
	// A restarted verifier resumes from status: nothing is due yet.
	l.r = &Reconciler{Client: l.c, Verifier: l.r.Verifier, Checks: ev, Now: l.r.Now}
	l.at(15 * time.Second)
	if ev.calls["errors"] != 2 {
		t.Fatalf("a restarted verifier evaluated before due: %v", ev.calls)
	}
	st, _, acc = l.at(59 * time.Second)
	expect(t, "t0+59s", st, acc, metav1.ConditionUnknown, v1alpha1.ReasonSoaking, status.InProgressStatus)
	st, _, acc = l.at(61 * time.Second)
	expect(t, "after the soak", st, acc, metav1.ConditionTrue, v1alpha1.ReasonVerified, status.CurrentStatus)
	if st.VerifiedAt == nil || !st.VerifiedAt.Time.Equal(l.now) {
		t.Fatalf("verifiedAt %v, want the end of the soak", st.VerifiedAt)
	}
	calls := ev.calls["errors"]
	l.at(10 * time.Minute)
	if ev.calls["errors"] != calls {
		t.Fatal("checks evaluated after the soak passed")
	}
}

// TestSoakFails: a check that fails its threshold in a row halts (Ready
// False CheckFailed, Stalled: kstatus Failed) with its value, and stays
// halted for the generation even if it passes later.
func TestSoakFails(t *testing.T) {
	t.Parallel()
	ev := &scripted{script: map[string][]runtimecheck.Result{"errors": {pass("0.01"), fail("0.2"), pass("0.01"), fail("0.3"), fail("0.4"), pass("0")}}}
	l := newCheckLab(t, checksSpec("10m", prom("errors", "10s", 2)), ev)
	for i, want := range []string{"Soaking", "Soaking", "Soaking", "Soaking", "CheckFailed", "CheckFailed"} {
		st, _, acc := l.at(time.Duration(i) * 10 * time.Second)
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		if c.Reason != want {
			t.Fatalf("round %d: %s %s, want %s", i, c.Reason, c.Message, want)
		}
		if want == "CheckFailed" {
			expect(t, "halted", st, acc, metav1.ConditionFalse, v1alpha1.ReasonCheckFailed, status.FailedStatus)
			if !strings.Contains(c.Message, "value 0.4") || st.Checks[0].ConsecutiveFailures != 2 {
				t.Fatalf("halted: %s %+v", c.Message, st.Checks)
			}
		}
	}
	if ev.calls["errors"] != 5 {
		t.Fatalf("evaluated a halted check: %d", ev.calls["errors"])
	}
}

// TestSoakUnverifiable: Prometheus down is never Verified, whatever the
// soak; Ready Unknown reason Unverifiable.
func TestSoakUnverifiable(t *testing.T) {
	t.Parallel()
	down := runtimecheck.Result{Verdict: v1alpha1.CheckUnverifiable, Message: "querying Prometheus: connection refused"}
	ev := &scripted{script: map[string][]runtimecheck.Result{"errors": {pass("0"), down}}}
	l := newCheckLab(t, checksSpec("30s", prom("errors", "10s", 1)), ev)
	l.at(0)
	for _, d := range []time.Duration{10 * time.Second, time.Minute, time.Hour} {
		st, requeue, acc := l.at(d)
		expect(t, d.String(), st, acc, metav1.ConditionUnknown, v1alpha1.ReasonUnverifiable, status.InProgressStatus)
		if requeue <= 0 || requeue > 10*time.Second {
			t.Fatalf("%s: requeue %s, want at most the interval", d, requeue)
		}
	}
	// Without an evaluator (serve built without checks) the same.
	l2 := newCheckLab(t, checksSpec("0s", prom("errors", "10s", 1)), nil)
	st, _, acc := l2.at(time.Hour)
	expect(t, "no evaluator", st, acc, metav1.ConditionUnknown, v1alpha1.ReasonUnverifiable, status.InProgressStatus)
}

// TestRolloutDeadline: a workload that never verifies within
// spec.deadlines.rollout turns Ready False DeadlineExceeded (kstatus
// Failed), and stays so.
func TestRolloutDeadline(t *testing.T) {
	spec := map[string]any{"app": "web", "renderedHash": dg('1'), "objectCount": int64(1),
		"deadlines": map[string]any{"rollout": "1m"},
		"workloads": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
			"containers": []any{map[string]any{"name": "app", "path": "spec.template.spec.containers[0]", "image": "r/web@" + dg('2'), "digest": dg('2')}}}}}
	l := newCheckLab(t, spec, nil)
	st, requeue, acc := l.at(0)
	expect(t, "t0", st, acc, metav1.ConditionFalse, v1alpha1.ReasonWorkloadNotFound, status.InProgressStatus)
	if requeue > time.Minute {
		t.Fatalf("requeue %s, want at most the deadline", requeue)
	}
	st, _, acc = l.at(30 * time.Second)
	expect(t, "t0+30s", st, acc, metav1.ConditionFalse, v1alpha1.ReasonWorkloadNotFound, status.InProgressStatus)
	for _, d := range []time.Duration{61 * time.Second, 5 * time.Minute} {
		st, _, acc = l.at(d)
		expect(t, d.String(), st, acc, metav1.ConditionFalse, v1alpha1.ReasonDeadlineExceeded, status.FailedStatus)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "WorkloadNotFound") {
		t.Fatalf("message %q does not say what was pending", c.Message)
	}
}

// gitChecks plays the committed checks: differs is its verdict, probe the
// namespaces it binds; asked records the Acceptances judged.
type gitChecks struct {
	differs string
	probe   []string
	asked   []string
}

func (g *gitChecks) CompareChecks(_ context.Context, ns, sourcePath string, _ *v1alpha1.RuntimeChecks) (string, []string, error) {
	g.asked = append(g.asked, ns+" "+sourcePath)
	return g.differs, g.probe, nil
}

// owners records the Owner each evaluation was given.
type owners struct {
	scripted
	seen []runtimecheck.Owner
}

func (o *owners) Evaluate(ctx context.Context, ow runtimecheck.Owner, c v1alpha1.RuntimeCheck) runtimecheck.Result {
	o.seen = append(o.seen, ow)
	return o.scripted.Evaluate(ctx, ow, c)
}

// TestChecksNotCommittedAreNotRun: a live Acceptance whose checks differ
// from the committed ones (created with the `edit` role, a check added)
// has none of them evaluated; its verdict says why. Checks that agree run
// with the namespaces the committed registry binds, and only then.
func TestChecksNotCommittedAreNotRun(t *testing.T) {
	t.Parallel()
	spec := checksSpec("0s", prom("error-ratio", "30s", 1))
	spec["sourcePath"] = "apps/checkout/overlays/staging"
	ev := &owners{scripted: scripted{script: map[string][]runtimecheck.Result{"error-ratio": {pass("0")}}}}
	l := newCheckLab(t, spec, ev)
	git := &gitChecks{differs: "the live Acceptance's checks differ from those committed in apps/checkout/overlays/staging/throughline-checks.yaml at 0123456789ab"}
	l.r.Committed = git
	st, _, acc := l.at(0)
	expect(t, "differs", st, acc, metav1.ConditionUnknown, v1alpha1.ReasonUnverifiable, status.InProgressStatus)
	if n := len(ev.seen); n != 0 {
		t.Fatalf("%d checks evaluated; want none", n)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "differ from those committed") {
		t.Fatalf("Ready message %q does not say why", c.Message)
	}
	if len(git.asked) != 1 || git.asked[0] != "shop apps/checkout/overlays/staging" {
		t.Fatalf("judged %q", git.asked)
	}
	git.differs, git.probe = "", []string{"shared-cache"}
	st, _, acc = l.at(time.Minute)
	expect(t, "agrees", st, acc, metav1.ConditionTrue, v1alpha1.ReasonVerified, status.CurrentStatus)
	if len(ev.seen) != 1 || !slices.Equal(ev.seen[0].ProbeNamespaces, []string{"shared-cache"}) {
		t.Fatalf("evaluations %+v; want one with the committed namespaces", ev.seen)
	}
}

// TestCheckUnverifiableHalts (issue 33): a check that cannot be measured
// (a label typo: no sample) is Unverifiable (Ready Unknown, waiting) until
// it has been so for its unverifiableAfter, by default the environment's
// reconcileDeadline (spec.deadlines.observedRevision), counted from its
// first Unverifiable evaluation; then Ready False CheckUnverifiable,
// Stalled (kstatus Failed, the notifier HALTs), naming the check and why,
// final for the generation. An explicit unverifiableAfter wins.
func TestCheckUnverifiableHalts(t *testing.T) {
	t.Parallel()
	noSamples := runtimecheck.Result{Verdict: v1alpha1.CheckUnverifiable, Message: "query returned no samples"}
	withUnverifiableAfter := func(after string) map[string]any {
		c := prom("errors", "10s", 1)
		if after != "" {
			c["unverifiableAfter"] = after
		}
		return c
	}
	for _, c := range []struct {
		name     string
		after    string // the check's unverifiableAfter
		deadline string // the environment's reconcileDeadline
		halts    time.Duration
	}{
		{"the default is the reconcileDeadline", "", "5m", 5 * time.Minute},
		{"unverifiableAfter wins over a longer reconcileDeadline", "2m", "30m", 2 * time.Minute},
		{"unverifiableAfter wins over a shorter reconcileDeadline", "8m", "1m", 8 * time.Minute},
		{"zero unverifiableAfter is the reconcileDeadline", "0s", "3m", 3 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Passes first, so the run of Unverifiable evaluations begins
			// at t0+10s, not when the soak began.
			ev := &scripted{script: map[string][]runtimecheck.Result{"errors": {pass("0"), noSamples}}}
			spec := checksSpec("1h", withUnverifiableAfter(c.after))
			spec["deadlines"] = map[string]any{"observedRevision": c.deadline}
			l := newCheckLab(t, spec, ev)
			l.at(0)
			began := 10 * time.Second
			st, requeue, acc := l.at(began)
			expect(t, "first unmeasurable", st, acc, metav1.ConditionUnknown, v1alpha1.ReasonUnverifiable, status.InProgressStatus)
			if s := runtimecheck.Find(st.Checks, "errors"); s == nil || s.UnverifiableSince == nil || !s.UnverifiableSince.Time.Equal(l.now) {
				t.Fatalf("unverifiableSince of %+v; want %s", s, l.now)
			}
			if requeue <= 0 || requeue > 10*time.Second {
				t.Fatalf("requeue %s", requeue)
			}
			st, _, acc = l.at(began + c.halts - time.Second)
			expect(t, "just before the deadline", st, acc, metav1.ConditionUnknown, v1alpha1.ReasonUnverifiable, status.InProgressStatus)
			st, _, acc = l.at(began + c.halts)
			expect(t, "at the deadline", st, acc, metav1.ConditionFalse, v1alpha1.ReasonCheckUnverifiable, status.FailedStatus)
			if s := runtimecheck.Find(st.Checks, "errors"); s == nil || s.Verdict != v1alpha1.CheckUnverifiable || s.Message != noSamples.Message {
				t.Fatalf("check status %+v; want the last Unverifiable evaluation", s)
			}
			calls := ev.calls["errors"]
			// Final for the generation: a later pass does not undo it.
			ev.script["errors"] = []runtimecheck.Result{pass("0")}
			st, requeue, acc = l.at(began + c.halts + time.Hour)
			expect(t, "later", st, acc, metav1.ConditionFalse, v1alpha1.ReasonCheckUnverifiable, status.FailedStatus)
			if ev.calls["errors"] != calls || requeue > DefaultResync {
				t.Fatalf("a halted check was evaluated again (%d calls, %d before) or requeued in %s", ev.calls["errors"], calls, requeue)
			}
		})
	}
	// Without a reconcileDeadline or an unverifiableAfter it waits, as
	// before.
	ev := &scripted{script: map[string][]runtimecheck.Result{"errors": {noSamples}}}
	l := newCheckLab(t, checksSpec("0s", prom("errors", "10s", 1)), ev)
	l.at(0)
	st, _, acc := l.at(24 * time.Hour)
	expect(t, "no deadline", st, acc, metav1.ConditionUnknown, v1alpha1.ReasonUnverifiable, status.InProgressStatus)
}

// TestUnverifiableAfterRefused: a check's unverifiableAfter that is not a
// duration or is negative makes the Acceptance Invalid (Ready False,
// Stalled), the error naming the field; nothing is evaluated. The wording
// is in testdata/unverifiable-after-refused.golden.
func TestUnverifiableAfterRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		value any
	}{
		{"negative", "-5m"},
		{"not a duration", "forever"},
		{"a number", int64(300)},
	}
	record := golden.ErrorLines(t, "testdata/unverifiable-after-refused.golden", len(cases))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			check := prom("errors", "10s", 1)
			check["unverifiableAfter"] = c.value
			ev := &scripted{script: map[string][]runtimecheck.Result{"errors": {pass("0")}}}
			l := newCheckLab(t, checksSpec("0s", prom("latency", "10s", 1), check), ev)
			st, _, acc := l.at(0)
			expect(t, c.name, st, acc, metav1.ConditionFalse, v1alpha1.ReasonInvalid, status.FailedStatus)
			if len(ev.calls) != 0 {
				t.Fatalf("evaluated %v", ev.calls)
			}
			_, err := DecodeSpec(acc)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "spec.checks.checks[1].unverifiableAfter" {
				t.Fatalf("DecodeSpec: %v; want a *FieldError naming spec.checks.checks[1].unverifiableAfter", err)
			}
			record(c.name, err)
		})
	}
}
