//go:build e2e

package runtimechecks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/health/argolua"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/runtimecheck"
)

const (
	digest       = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	image        = "registry.example/shop/checkout@" + digest
	renderedHash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

// lab is the cluster, Prometheus and the exporter shared by the cases.
type lab struct {
	t      *testing.T
	ctx    context.Context
	c      client.Client
	exp    *testenv.Exporter
	prom   *testenv.PrometheusServer
	script string
}

// TestRuntimeChecks runs the four cases of issue 20 against one cluster and
// one Prometheus; the stopped-Prometheus case runs after the others.
func TestRuntimeChecks(t *testing.T) {
	testenv.RequireControllerManager(t)
	testenv.RequirePrometheus(t)
	root := testenv.RepoRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")}})
	testenv.StartControllerManager(ctx, t, api) // the real deployment and replicaset controllers
	namespaces := []string{"red", "green", "down", "smoke", "web"}
	for _, ns := range namespaces {
		if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// The kubelet is PLAYED (no container runtime here): it binds the Pods
	// and writes their running status with the declared image's imageID.
	testenv.StartKubelet(ctx, t, api.Client, testenv.KubeletOptions{Namespaces: namespaces})
	exp := testenv.StartExporter(t)
	prom := testenv.StartPrometheus(t, exp.Target)
	script, err := argolua.LoadScript(filepath.Join(root, "deploy", "argocd", "argocd-cm-health.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	startVerifier(ctx, t, api.Config, prom.URL)
	l := &lab{t: t, ctx: ctx, c: api.Client, exp: exp, prom: prom, script: script}
	t.Run("error ratio rises during the soak: CheckFailed", l.errorRatioRises)
	t.Run("green through the soak: Verified after it", l.greenSoak)
	t.Run("failing smoke-test Job: CheckFailed", l.failingJob)
	t.Run("HTTP probe of a Service that starts failing: CheckFailed", l.httpProbe)
	t.Run("Prometheus stopped: Unverifiable", l.prometheusDown)
}

// startVerifier runs the verifier of `throughline serve --prometheus-url`
// (health.NewManager) until the test ends.
func startVerifier(ctx context.Context, t *testing.T, cfg *rest.Config, promURL string) {
	p, err := runtimecheck.NewPrometheus(runtimecheck.PrometheusConfig{URL: promURL})
	if err != nil {
		t.Fatal(err)
	}
	mgr, _, err := health.NewManager(ctx, cfg, health.ManagerOptions{MetricsAddr: "0", ProbeAddr: "0", Prometheus: p,
		PendingWait: time.Second, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatalf("verifier: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("verifier: %v", err)
		}
	})
}

// release creates the Deployment checkout in ns (rolled out by the real
// controllers and the played kubelet) and its Acceptance with checks.
func (l *lab) release(ns string, checks map[string]any) {
	l.t.Helper()
	labels := map[string]string{"app": "checkout"}
	if err := l.c.Create(l.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}},
	}}); err != nil {
		l.t.Fatal(err)
	}
	acc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "throughline.dev/v1alpha1", "kind": "Acceptance",
		"metadata": map[string]any{"name": "checkout", "namespace": ns},
		"spec": map[string]any{"app": "checkout", "environment": "production", "renderedHash": renderedHash, "objectCount": int64(2),
			"workloads": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "checkout",
				"containers": []any{map[string]any{"name": "app", "path": "spec.template.spec.containers[0]", "image": image, "digest": digest}}}},
			"checks": checks},
	}}
	if err := l.c.Create(l.ctx, acc); err != nil {
		l.t.Fatal(err)
	}
}

func promChecks(soak, ns string, threshold int64) map[string]any {
	return map[string]any{"soak": soak, "checks": []any{map[string]any{
		"name": "error-ratio", "interval": "1s", "failureThreshold": threshold,
		"prometheus": map[string]any{"query": fmt.Sprintf(`max(checkout_error_ratio{ns=%q})`, ns), "op": "<", "threshold": 0.05},
	}}}
}

// observed is the Acceptance as read, with its Ready condition, kstatus
// and Argo CD health.
type observed struct {
	acc     *unstructured.Unstructured
	status  v1alpha1.AcceptanceStatus
	ready   metav1.Condition
	kstatus status.Status
	argo    string
}

// wait polls the Acceptance of ns until done says so; what names the arrow
// in the failure.
func (l *lab) wait(ns, what string, d time.Duration, done func(o observed) bool) observed {
	l.t.Helper()
	deadline := time.Now().Add(d)
	var last observed
	for {
		acc := health.NewAcceptance()
		if err := l.c.Get(l.ctx, client.ObjectKey{Namespace: ns, Name: "checkout"}, acc); err != nil {
			l.t.Fatalf("%s: %v", what, err)
		}
		st, err := health.ReadStatus(acc)
		if err != nil {
			l.t.Fatalf("%s: %v", what, err)
		}
		last = observed{acc: acc, status: st}
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil && st.ObservedGeneration == acc.GetGeneration() {
			last.ready = *c
			res, err := status.Compute(acc)
			if err != nil {
				l.t.Fatalf("%s: kstatus: %v", what, err)
			}
			last.kstatus = res.Status
			if last.argo, _, err = argolua.Run(l.script, acc.Object); err != nil {
				l.t.Fatalf("%s: Argo CD health: %v", what, err)
			}
			if done(last) {
				return last
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("%s: not within %s; Ready %s %s %q, checks %+v", what, d, last.ready.Status, last.ready.Reason, last.ready.Message, last.status.Checks)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func reason(r string) func(observed) bool {
	return func(o observed) bool { return o.ready.Reason == r }
}

// errorRatioRises: the release soaks green, then its error ratio rises:
// after failureThreshold failed evaluations Ready is False CheckFailed
// with the measured value in status.checks (kstatus Failed, Argo CD
// Degraded), and it stays so when the ratio recovers.
func (l *lab) errorRatioRises(t *testing.T) {
	ratio := l.exp.Gauge(t, "checkout_error_ratio", prometheus.Labels{"ns": "red"})
	ratio.Set(0.01)
	l.release("red", promChecks("10m", "red", 2))
	o := l.wait("red", "arrow red soaking", time.Minute, func(o observed) bool {
		return o.ready.Reason == v1alpha1.ReasonSoaking && len(o.status.Checks) == 1 && o.status.Checks[0].Verdict == v1alpha1.CheckPassed
	})
	if o.ready.Status != metav1.ConditionUnknown || o.kstatus != status.InProgressStatus || o.argo != "Progressing" || o.status.SoakStartedAt == nil {
		t.Fatalf("arrow red soaking: Ready %s, kstatus %s, Argo CD %s, soakStartedAt %v", o.ready.Status, o.kstatus, o.argo, o.status.SoakStartedAt)
	}
	ratio.Set(0.3)
	o = l.wait("red", "arrow red halted", 30*time.Second, reason(v1alpha1.ReasonCheckFailed))
	c := o.status.Checks[0]
	if o.ready.Status != metav1.ConditionFalse || o.kstatus != status.FailedStatus || o.argo != "Degraded" ||
		c.Value != "0.3" || c.Verdict != v1alpha1.CheckFailed || c.ConsecutiveFailures < 2 || !strings.Contains(o.ready.Message, "value 0.3") {
		t.Fatalf("arrow red halted: Ready %s %q, kstatus %s, Argo CD %s, check %+v", o.ready.Status, o.ready.Message, o.kstatus, o.argo, c)
	}
	ratio.Set(0.01)
	time.Sleep(3 * time.Second)
	l.wait("red", "arrow red stays halted", time.Second, reason(v1alpha1.ReasonCheckFailed))
}

// greenSoak: Ready is Unknown (Soaking) while the soak runs, True
// (Verified) only after it, verifiedAt at least the soak after
// soakStartedAt.
func (l *lab) greenSoak(t *testing.T) {
	l.exp.Gauge(t, "checkout_error_ratio", prometheus.Labels{"ns": "green"}).Set(0.001)
	const soak = 8 * time.Second
	l.release("green", promChecks(soak.String(), "green", 1))
	o := l.wait("green", "arrow green soaking", time.Minute, reason(v1alpha1.ReasonSoaking))
	if o.ready.Status != metav1.ConditionUnknown || o.kstatus != status.InProgressStatus || o.argo != "Progressing" {
		t.Fatalf("arrow green soaking: Ready %s, kstatus %s, Argo CD %s", o.ready.Status, o.kstatus, o.argo)
	}
	o = l.wait("green", "arrow green verified", time.Minute, reason(v1alpha1.ReasonVerified))
	st := o.status
	if o.ready.Status != metav1.ConditionTrue || o.kstatus != status.CurrentStatus || o.argo != "Healthy" || st.VerifiedAt == nil ||
		st.SoakStartedAt == nil || st.VerifiedAt.Sub(st.SoakStartedAt.Time) < soak || st.Checks[0].Value != "0.001" {
		t.Fatalf("arrow green verified: Ready %s, kstatus %s, Argo CD %s, soak %v -> verified %v, checks %+v",
			o.ready.Status, o.kstatus, o.argo, st.SoakStartedAt, st.VerifiedAt, st.Checks)
	}
}

// failingJob: the smoke-test Job is created by the verifier (owned by the
// Acceptance, once for the generation) and fails: Ready False CheckFailed.
func (l *lab) failingJob(t *testing.T) {
	l.release("smoke", map[string]any{"soak": "0s", "checks": []any{map[string]any{
		"name": "smoke", "interval": "1s", "job": map[string]any{"image": image, "command": []any{"/smoke"}, "deadline": "1m"},
	}}})
	o := l.wait("smoke", "arrow smoke Job running", time.Minute, reason(v1alpha1.ReasonSoaking))
	var job batchv1.Job
	name := runtimecheck.JobName("checkout", o.acc.GetGeneration(), "smoke")
	if err := l.c.Get(l.ctx, client.ObjectKey{Namespace: "smoke", Name: name}, &job); err != nil {
		t.Fatalf("arrow smoke Job created: %v", err)
	}
	if len(job.OwnerReferences) != 1 || job.OwnerReferences[0].UID != o.acc.GetUID() || *job.Spec.BackoffLimit != 0 ||
		*job.Spec.ActiveDeadlineSeconds != 60 || job.Spec.Template.Spec.Containers[0].Image != image {
		t.Fatalf("arrow smoke Job spec: %+v", job)
	}
	// The Job's outcome is PLAYED: this kube-controller-manager runs no job
	// controller (internal/testenv/controllermanager.go) and the kubelet is
	// played, so the test writes what the job controller would once its Pod
	// failed: FailureTarget, then Failed.
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Failed = 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit",
			LastTransitionTime: now, LastProbeTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit",
			LastTransitionTime: now, LastProbeTime: now},
	}
	if err := l.c.Status().Update(l.ctx, &job); err != nil {
		t.Fatalf("playing the Job's failure: %v", err)
	}
	o = l.wait("smoke", "arrow smoke halted", 30*time.Second, reason(v1alpha1.ReasonCheckFailed))
	if o.kstatus != status.FailedStatus || o.argo != "Degraded" || !strings.Contains(o.ready.Message, "BackoffLimitExceeded") {
		t.Fatalf("arrow smoke halted: kstatus %s, Argo CD %s, %q", o.kstatus, o.argo, o.ready.Message)
	}
	var jobs batchv1.JobList
	if err := l.c.List(l.ctx, &jobs, client.InNamespace("smoke")); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("arrow smoke one Job per generation: %d Jobs, %v", len(jobs.Items), err)
	}
}

// prometheusDown: with Prometheus stopped the check is Unverifiable, Ready
// Unknown (kstatus InProgress, Argo CD Progressing: the notifier waits and
// answers 503), and never True, however long after the soak.
func (l *lab) prometheusDown(t *testing.T) {
	l.exp.Gauge(t, "checkout_error_ratio", prometheus.Labels{"ns": "down"}).Set(0.001)
	l.prom.Stop()
	l.release("down", promChecks("1s", "down", 1))
	l.wait("down", "arrow down unverifiable", time.Minute, reason(v1alpha1.ReasonUnverifiable))
	time.Sleep(3 * time.Second)
	o := l.wait("down", "arrow down still unverifiable after the soak", time.Second, reason(v1alpha1.ReasonUnverifiable))
	if o.ready.Status != metav1.ConditionUnknown || o.kstatus != status.InProgressStatus || o.argo != "Progressing" ||
		o.status.Checks[0].Verdict != v1alpha1.CheckUnverifiable || !strings.Contains(o.ready.Message, "querying Prometheus") {
		t.Fatalf("arrow down: Ready %s %q, kstatus %s, Argo CD %s, checks %+v", o.ready.Status, o.ready.Message, o.kstatus, o.argo, o.status.Checks)
	}
}

// podIP is the address of the played Pod serving HTTP: EndpointSlices may
// not name a loopback address, so the test adds this one to lo in its
// private network namespace (hack/netns-exec.sh).
const podIP = "10.250.0.1"

// httpProbe: a Service (port 80, named http, targetPort 8080) whose
// EndpointSlice names a real HTTP server; the probe passes while it answers
// 200 with the expected body, then the server answers 503 and the check
// halts after its threshold.
func (l *lab) httpProbe(t *testing.T) {
	if os.Getenv("THROUGHLINE_PRIVATE_NETNS") != "1" {
		if testenv.InCI() {
			t.Fatal("CI=true and not in a private network namespace (run with -exec hack/netns-exec.sh)")
		}
		t.Skip("needs a private network namespace (go test -exec hack/netns-exec.sh) to add a Pod address to lo")
	}
	if out, err := exec.Command("ip", "addr", "add", podIP+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s: %v %s", podIP, err, out)
	}
	ln, err := net.Listen("tcp", podIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	var broken atomic.Bool
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() || r.URL.Path != "/healthz" {
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	must(t, l.c.Create(l.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "checkout"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}))
	// No endpointslice controller runs here: the test writes the slice it
	// would, with the server as the one ready endpoint.
	must(t, l.c.Create(l.ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "checkout-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: "checkout", discoveryv1.LabelManagedBy: "e2e.throughline.dev"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}))
	l.release("web", map[string]any{"soak": "10m", "checks": []any{map[string]any{
		"name": "healthz", "interval": "1s", "failureThreshold": int64(2),
		"http": map[string]any{"service": map[string]any{"name": "checkout", "port": int64(80)}, "path": "/healthz",
			"bodyMatch": `"status":\s*"ok"`, "maxLatency": "2s"},
	}}})
	o := l.wait("web", "arrow web probe passes", time.Minute, func(o observed) bool {
		return o.ready.Reason == v1alpha1.ReasonSoaking && len(o.status.Checks) == 1 && o.status.Checks[0].Verdict == v1alpha1.CheckPassed
	})
	if !strings.HasPrefix(o.status.Checks[0].Value, "200 in ") || !strings.Contains(o.status.Checks[0].Message, "1 ready endpoints answered 200") {
		t.Fatalf("arrow web probe passes: %+v", o.status.Checks[0])
	}
	broken.Store(true)
	o = l.wait("web", "arrow web probe halts", 30*time.Second, reason(v1alpha1.ReasonCheckFailed))
	if !strings.Contains(o.ready.Message, net.JoinHostPort(podIP, strconv.Itoa(int(port)))+": status 503, want 200") || !strings.HasPrefix(o.status.Checks[0].Value, "503 in ") || o.argo != "Degraded" {
		t.Fatalf("arrow web probe halts: %q %+v, Argo CD %s", o.ready.Message, o.status.Checks[0], o.argo)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
