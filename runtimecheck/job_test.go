package runtimecheck

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&batchv1.Job{}).Build()
}

func TestJobName(t *testing.T) {
	t.Parallel()
	if got := JobName("checkout", 3, "smoke"); got != "checkout-3-smoke" {
		t.Fatal(got)
	}
	long := JobName(strings.Repeat("a", 60), 12, "smoke-test")
	other := JobName(strings.Repeat("a", 60), 12, "smoke-tesu")
	if len(long) > 63 || long == other || long != JobName(strings.Repeat("a", 60), 12, "smoke-test") {
		t.Fatalf("long names: %q %q", long, other)
	}
}

// TestJobCheck runs a smoke test through its life: created once with the
// declared spec and an owner reference, read (never created again) at the
// next rounds, Passed on Complete, Failed (final) on Failed; a Job of the
// same name the Acceptance does not own is never trusted.
func TestJobCheck(t *testing.T) {
	ctx := context.Background()
	c := fakeClient(t)
	jobs := &Jobs{Client: c}
	o := Owner{Namespace: "shop", Name: "checkout", UID: "uid-1", Generation: 4}
	check := &v1alpha1.JobCheck{Image: "registry.example/smoke@sha256:" + strings.Repeat("a", 64), Command: []string{"/smoke"},
		Args: []string{"--fast"}, ServiceAccountName: "smoke", Deadline: metav1.Duration{Duration: 90 * time.Second}}
	r := jobs.Evaluate(ctx, o, "smoke", check)
	if r.Verdict != v1alpha1.CheckPending || !strings.Contains(r.Message, "created") {
		t.Fatalf("first round: %+v", r)
	}
	var job batchv1.Job
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "checkout-4-smoke"}, &job); err != nil {
		t.Fatal(err)
	}
	ps := job.Spec.Template.Spec
	switch {
	case *job.Spec.BackoffLimit != 0, *job.Spec.ActiveDeadlineSeconds != 90, ps.RestartPolicy != corev1.RestartPolicyNever,
		ps.ServiceAccountName != "smoke", ps.Containers[0].Image != check.Image, ps.Containers[0].Command[0] != "/smoke",
		ps.Containers[0].Args[0] != "--fast", len(job.OwnerReferences) != 1, job.OwnerReferences[0].UID != "uid-1":
		t.Fatalf("Job spec: %+v", job)
	}
	if r := jobs.Evaluate(ctx, o, "smoke", check); r.Verdict != v1alpha1.CheckPending || !strings.Contains(r.Message, "running") {
		t.Fatalf("second round: %+v", r)
	}
	var list batchv1.JobList
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("Jobs after two rounds: %d, %v", len(list.Items), err)
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "too slow"}}
	if err := c.Status().Update(ctx, &job); err != nil {
		t.Fatal(err)
	}
	if r := jobs.Evaluate(ctx, o, "smoke", check); r.Verdict != v1alpha1.CheckFailed || !r.Final || !strings.Contains(r.Message, "DeadlineExceeded") {
		t.Fatalf("failed Job: %+v", r)
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	if err := c.Status().Update(ctx, &job); err != nil {
		t.Fatal(err)
	}
	if r := jobs.Evaluate(ctx, o, "smoke", check); r.Verdict != v1alpha1.CheckPassed || !r.Final {
		t.Fatalf("complete Job: %+v", r)
	}
	// The next generation gets its own Job; the older one is deleted.
	o.Generation = 5
	if r := jobs.Evaluate(ctx, o, "smoke", check); r.Verdict != v1alpha1.CheckPending {
		t.Fatalf("generation 5: %+v", r)
	}
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "checkout-5-smoke" {
		t.Fatalf("Jobs after generation 5: %+v, %v", list.Items, err)
	}
}

// TestJobCheckForeignJob: someone pre-creates a completed Job of the name
// the verifier would use. It must not pass the check.
func TestJobCheckForeignJob(t *testing.T) {
	t.Parallel()
	forged := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "checkout-4-smoke"},
		Status:     batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
	}
	jobs := &Jobs{Client: fakeClient(t, forged)}
	r := jobs.Evaluate(context.Background(), Owner{Namespace: "shop", Name: "checkout", UID: "uid-1", Generation: 4}, "smoke", &v1alpha1.JobCheck{Image: "i"})
	if r.Verdict != v1alpha1.CheckUnverifiable || !strings.Contains(r.Message, "not created by throughline") {
		t.Fatalf("forged Job: %+v", r)
	}
}
