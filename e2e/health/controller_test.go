//go:build e2e

package health

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/testenv"
)

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func kstatusOf(t *testing.T, u *unstructured.Unstructured) status.Status {
	t.Helper()
	res, err := status.Compute(u)
	must(t, err)
	return res.Status
}

// closedPort is a loopback address where nothing listens: a registry that
// is down.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}

// TestAcceptanceController: one kube-apiserver, one registry, one
// controller; each subtest is a namespace where the test plays kubelet and
// the workload controllers.
func TestAcceptanceController(t *testing.T) {
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	ctx := testContext(t, 8*time.Minute)
	img := pushIndex(ctx, t, reg.Host, "demo/app")
	other := pushIndex(ctx, t, reg.Host, "demo/other")
	testenv.StartVerifier(ctx, t, api.Config)
	c := api.Client
	app := func(image string) ctr { return ctr{name: "app", image: image} }

	t.Run("exact digest", func(t *testing.T) {
		w := newWorld(ctx, t, c, "exact")
		node := w.node("amd64", "linux", "amd64")
		w.acceptance("web", "web", app(img.Image()))
		// Before the verifier wrote anything, kstatus (Flux) reads the
		// object as the API server serves it as InProgress.
		u, _, _ := w.ready("web")
		if got := kstatusOf(t, u); got != status.InProgressStatus {
			t.Fatalf("kstatus of a fresh Acceptance = %s, want InProgress (status %v)", got, u.Object["status"])
		}
		w.waitReason("web", v1alpha1.ReasonWorkloadNotFound)
		_, rs := w.deployment("web", 2, app(img.Image()))
		p1, p2 := w.pod(rs, "web-1", node), w.pod(rs, "web-2", node)
		u, _ = w.waitReason("web", v1alpha1.ReasonRolloutInProgress)
		if got := kstatusOf(t, u); got != status.InProgressStatus {
			t.Fatalf("kstatus while the rollout runs = %s, want InProgress", got)
		}
		w.kubelet(p1, 0, map[string]string{"app": "docker-pullable://" + img.Repo + "@" + img.Index})
		w.waitReason("web", v1alpha1.ReasonRolloutInProgress)
		w.kubelet(p2, 0, map[string]string{"app": img.Repo + "@" + img.Index})
		u, st := w.waitReason("web", v1alpha1.ReasonVerified)
		if got := kstatusOf(t, u); got != status.CurrentStatus {
			t.Fatalf("kstatus when verified = %s, want Current", got)
		}
		if st.VerifiedAt == nil || st.RenderedHash != renderedHash || st.Workloads[0].Pods != 2 || st.Workloads[0].Revision != "h1" {
			t.Fatalf("status %+v", st)
		}
		for _, o := range st.Workloads[0].Containers[0].Observed {
			if o.Match != v1alpha1.MatchExact || o.Outcome != health.Verified {
				t.Fatalf("observed %+v, want Exact", o)
			}
		}
	})

	t.Run("index child on an arm64 node", func(t *testing.T) {
		w := newWorld(ctx, t, c, "child")
		node := w.node("arm64", "linux", "arm64")
		w.acceptance("web", "web", app(img.Image()))
		_, rs := w.deployment("web", 1, app(img.Image()))
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": img.Repo + "@" + img.Children["linux/arm64/v8"]})
		_, st := w.waitReason("web", v1alpha1.ReasonVerified)
		if o := observed(t, st); o.Match != v1alpha1.MatchIndexChild || o.Platform != "linux/arm64/v8" {
			t.Fatalf("observed %+v, want IndexChild linux/arm64/v8", o)
		}
	})

	t.Run("amd64 child on an arm64 node", func(t *testing.T) {
		w := newWorld(ctx, t, c, "wrongplatform")
		node := w.node("arm64", "linux", "arm64")
		w.acceptance("web", "web", app(img.Image()))
		_, rs := w.deployment("web", 1, app(img.Image()))
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": img.Repo + "@" + img.Children["linux/amd64"]})
		w.waitReason("web", v1alpha1.ReasonImageMismatch)
	})

	t.Run("bare config digest", func(t *testing.T) {
		w := newWorld(ctx, t, c, "config")
		node := w.node("amd64", "linux", "amd64")
		w.acceptance("web", "web", app(img.Image()))
		_, rs := w.deployment("web", 1, app(img.Image()))
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": img.Configs["linux/amd64"]})
		_, st := w.waitReason("web", v1alpha1.ReasonVerified)
		if o := observed(t, st); o.Match != v1alpha1.MatchConfigDigest {
			t.Fatalf("observed %+v, want ConfigDigest", o)
		}
	})

	t.Run("wrong digest", func(t *testing.T) {
		w := newWorld(ctx, t, c, "wrong")
		node := w.node("amd64", "linux", "amd64")
		w.acceptance("web", "web", app(img.Image()))
		_, rs := w.deployment("web", 1, app(img.Image()))
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": other.Repo + "@" + other.Index})
		u, st := w.waitReason("web", v1alpha1.ReasonImageMismatch)
		if got := kstatusOf(t, u); got != status.FailedStatus {
			t.Fatalf("kstatus on a mismatch = %s, want Failed", got)
		}
		if o := observed(t, st); o.Outcome != health.Mismatch || !strings.Contains(o.Message, other.Index) {
			t.Fatalf("observed %+v", o)
		}
		if st.VerifiedAt != nil {
			t.Fatal("verifiedAt set on a mismatch")
		}
	})

	t.Run("pod with no imageID yet", func(t *testing.T) {
		w := newWorld(ctx, t, c, "noimageid")
		node := w.node("amd64", "linux", "amd64")
		w.acceptance("web", "web", app(img.Image()))
		_, rs := w.deployment("web", 1, app(img.Image()))
		p := w.pod(rs, "web-1", node)
		w.kubelet(p, 0, map[string]string{"app": ""})
		_, st := w.waitFor("web", v1alpha1.ReasonRolloutInProgress, func(st v1alpha1.AcceptanceStatus) bool {
			return len(st.Workloads) == 1 && st.Workloads[0].Pods == 1
		})
		if o := observed(t, st); o.Outcome != health.Pending || o.Pod != "web-1" {
			t.Fatalf("observed %+v, want Pending", o)
		}
		w.kubelet(p, 0, map[string]string{"app": img.Repo + "@" + img.Index})
		w.waitReason("web", v1alpha1.ReasonVerified)
	})

	t.Run("init container", func(t *testing.T) {
		w := newWorld(ctx, t, c, "init")
		node := w.node("amd64", "linux", "amd64")
		migrate := ctr{name: "migrate", image: other.Image(), init: true}
		w.acceptance("web", "web", migrate, app(img.Image()))
		_, rs := w.deployment("web", 1, migrate, app(img.Image()))
		p := w.pod(rs, "web-1", node)
		// The init container ran the wrong image: a mismatch even though
		// it has terminated.
		w.kubelet(p, 0, map[string]string{"migrate": img.Repo + "@" + img.Index, "app": img.Repo + "@" + img.Index})
		w.waitReason("web", v1alpha1.ReasonImageMismatch)
		w.kubelet(p, 0, map[string]string{"migrate": other.Repo + "@" + other.Index, "app": img.Repo + "@" + img.Index})
		w.waitReason("web", v1alpha1.ReasonVerified)
	})

	t.Run("container restarted with another image", func(t *testing.T) {
		w := newWorld(ctx, t, c, "restart")
		node := w.node("amd64", "linux", "amd64")
		w.acceptance("web", "web", app(img.Image()))
		_, rs := w.deployment("web", 1, app(img.Image()))
		p := w.pod(rs, "web-1", node)
		w.kubelet(p, 0, map[string]string{"app": img.Repo + "@" + img.Index})
		w.waitReason("web", v1alpha1.ReasonVerified)
		w.kubelet(p, 1, map[string]string{"app": other.Repo + "@" + other.Index})
		_, st := w.waitReason("web", v1alpha1.ReasonImageMismatch)
		if o := observed(t, st); o.Restarts != 1 {
			t.Fatalf("observed %+v, want restarts 1", o)
		}
	})

	t.Run("node without platform labels", func(t *testing.T) {
		w := newWorld(ctx, t, c, "nolabels")
		node := w.node("bare", "", "")
		w.acceptance("web", "web", app(img.Image()))
		_, rs := w.deployment("web", 1, app(img.Image()))
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": img.Repo + "@" + img.Children["linux/arm64/v8"]})
		_, st := w.waitReason("web", v1alpha1.ReasonUnverifiable)
		if o := observed(t, st); !strings.Contains(o.Message, "no kubernetes.io/os") {
			t.Fatalf("observed %+v", o)
		}
	})

	t.Run("registry down", func(t *testing.T) {
		w := newWorld(ctx, t, c, "regdown")
		node := w.node("arm64", "linux", "arm64")
		// An index never seen (manifests are cached by digest, so a digest
		// already resolved needs no registry), in a registry that is down.
		unseen, _ := buildIndex(t, closedPort(t), "demo/app")
		w.acceptance("web", "web", app(unseen.Image()))
		_, rs := w.deployment("web", 1, app(unseen.Image()))
		// The child digest needs the registry to be verified: it cannot be.
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": unseen.Repo + "@" + unseen.Children["linux/arm64/v8"]})
		u, st := w.waitReason("web", v1alpha1.ReasonUnverifiable)
		if got := kstatusOf(t, u); got != status.InProgressStatus {
			t.Fatalf("kstatus when unverifiable = %s, want InProgress", got)
		}
		if o := observed(t, st); !strings.Contains(o.Message, "registry unreachable") {
			t.Fatalf("observed %+v", o)
		}
		// Retried with backoff, and never Verified.
		for range 20 {
			time.Sleep(100 * time.Millisecond)
			if _, _, cond := w.ready("web"); cond.Reason != v1alpha1.ReasonUnverifiable || cond.Status == "True" {
				t.Fatalf("registry down: Ready %s %s", cond.Status, cond.Reason)
			}
		}
	})

	t.Run("digest unknown to the registry", func(t *testing.T) {
		w := newWorld(ctx, t, c, "unknown")
		node := w.node("amd64", "linux", "amd64")
		unseen, _ := buildIndex(t, reg.Host, "demo/app")
		w.acceptance("web", "web", app(unseen.Image()))
		_, rs := w.deployment("web", 1, app(unseen.Image()))
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": unseen.Configs["linux/amd64"]})
		_, st := w.waitReason("web", v1alpha1.ReasonUnverifiable)
		if o := observed(t, st); !strings.Contains(o.Message, "not found") {
			t.Fatalf("observed %+v", o)
		}
	})

	t.Run("workload does not exist", func(t *testing.T) {
		w := newWorld(ctx, t, c, "missing")
		w.acceptance("web", "nothere", app(img.Image()))
		_, st := w.waitReason("web", v1alpha1.ReasonWorkloadNotFound)
		if st.Workloads[0].Message != "not found" {
			t.Fatalf("status %+v", st)
		}
	})

	t.Run("malformed acceptance", func(t *testing.T) {
		w := newWorld(ctx, t, c, "malformed")
		// The CRD schema refuses a malformed rendered hash.
		bad := health.NewAcceptance()
		bad.SetNamespace(w.ns)
		bad.SetName("bad")
		bad.Object["spec"] = map[string]any{"app": "x", "renderedHash": "sha256:nothex", "workloads": []any{}}
		if err := c.Create(ctx, bad); !apierrors.IsInvalid(err) {
			t.Fatalf("malformed renderedHash: %v, want Invalid", err)
		}
		// What the schema lets through, the verifier refuses: a digest that
		// is not sha256:<64 hex>.
		w.acceptance("web", "web", app(img.Repo+":v1@sha256:1234"))
		u, st := w.waitReason("web", v1alpha1.ReasonInvalid)
		if got := kstatusOf(t, u); got != status.FailedStatus {
			t.Fatalf("kstatus of an invalid Acceptance = %s, want Failed", got)
		}
		if _, _, cond := w.ready("web"); !strings.Contains(cond.Message, "spec.workloads[0].containers[0]") {
			t.Fatalf("Ready message %q does not name the field (%+v)", cond.Message, st)
		}
	})

	t.Run("statefulset", func(t *testing.T) {
		w := newWorld(ctx, t, c, "sts")
		node := w.node("arm64", "linux", "arm64")
		lbl := map[string]string{"app": "db"}
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: lbl}, ServiceName: "db",
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img.Image()}}}}}}
		must(t, c.Create(ctx, s))
		w.acceptanceFor("db", "apps/v1", "StatefulSet", "db", app(img.Image()))
		own := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: s.UID, Controller: ptr.To(true)}
		p0 := w.podOf(&s.Spec.Template, map[string]string{health.LabelControllerRevisionHash: "db-2"}, own, "db-0", node)
		p1 := w.podOf(&s.Spec.Template, map[string]string{health.LabelControllerRevisionHash: "db-1"}, own, "db-1", node)
		childID := map[string]string{"app": img.Repo + "@" + img.Children["linux/arm64/v8"]}
		w.kubelet(p0, 0, childID)
		w.kubelet(p1, 0, childID)
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 2, UpdatedReplicas: 1, CurrentRevision: "db-1", UpdateRevision: "db-2"}
		must(t, c.Status().Update(ctx, s))
		w.waitReason("db", v1alpha1.ReasonRolloutInProgress)
		// db-1 is replaced by a Pod of the update revision.
		must(t, c.Delete(ctx, p1))
		p1b := w.podOf(&s.Spec.Template, map[string]string{health.LabelControllerRevisionHash: "db-2"}, own, "db-1b", node)
		w.kubelet(p1b, 0, childID)
		must(t, c.Get(ctx, clientKey(s), s))
		s.Status.UpdatedReplicas, s.Status.CurrentRevision = 2, "db-2"
		must(t, c.Status().Update(ctx, s))
		_, st := w.waitReason("db", v1alpha1.ReasonVerified)
		if st.Workloads[0].Revision != "db-2" || st.Workloads[0].Pods != 2 {
			t.Fatalf("status %+v", st.Workloads[0])
		}
	})

	t.Run("daemonset", func(t *testing.T) {
		w := newWorld(ctx, t, c, "ds")
		node := w.node("amd64", "linux", "amd64")
		lbl := map[string]string{"app": "agent"}
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "agent"}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img.Image()}}}}}}
		must(t, c.Create(ctx, ds))
		own := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: ds.UID, Controller: ptr.To(true)}
		for i, h := range []string{"h1", "h2"} {
			must(t, c.Create(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "agent-" + h,
				Labels: map[string]string{"app": "agent", health.LabelControllerRevisionHash: h}, OwnerReferences: []metav1.OwnerReference{own}},
				Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: int64(i + 1)}))
		}
		w.acceptanceFor("agent", "apps/v1", "DaemonSet", "agent", app(img.Image()))
		p := w.podOf(&ds.Spec.Template, map[string]string{health.LabelControllerRevisionHash: "h2"}, own, "agent-x", node)
		w.kubelet(p, 0, map[string]string{"app": img.Configs["linux/amd64"]})
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, UpdatedNumberScheduled: 1}
		must(t, c.Status().Update(ctx, ds))
		_, st := w.waitReason("agent", v1alpha1.ReasonVerified)
		if o := observed(t, st); st.Workloads[0].Revision != "h2" || o.Match != v1alpha1.MatchConfigDigest {
			t.Fatalf("status %+v", st.Workloads[0])
		}
	})

	t.Run("job", func(t *testing.T) {
		w := newWorld(ctx, t, c, "job")
		node := w.node("amd64", "linux", "amd64")
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "migrate"}, Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app", Image: img.Image()}}}}}}
		must(t, c.Create(ctx, j)) // the API server sets the selector and the controller-uid labels
		w.acceptanceFor("migrate", "batch/v1", "Job", "migrate", app(img.Image()))
		w.waitReason("migrate", v1alpha1.ReasonRolloutInProgress)
		p := w.podOf(&j.Spec.Template, nil, metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "migrate", UID: j.UID, Controller: ptr.To(true)}, "migrate-x", node)
		w.kubelet(p, 0, map[string]string{"app": other.Repo + "@" + other.Index})
		w.waitReason("migrate", v1alpha1.ReasonImageMismatch)
	})

	t.Run("argo rollout", func(t *testing.T) {
		w := newWorld(ctx, t, c, "argo")
		node := w.node("arm64", "linux", "arm64")
		w.acceptanceFor("web", "argoproj.io/v1alpha1", "Rollout", "web", app(img.Image()))
		// Before Argo Rollouts' CRD exists the workload cannot be found.
		w.waitReason("web", v1alpha1.ReasonWorkloadNotFound)
		crd := filepath.Join(t.TempDir(), "rollouts.yaml")
		must(t, os.WriteFile(crd, []byte(rolloutCRD), 0o600))
		must(t, api.InstallCRDs(ctx, crd))
		lbl := map[string]any{"app": "web"}
		ro := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"namespace": w.ns, "name": "web"},
			"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": lbl},
				"template": map[string]any{"metadata": map[string]any{"labels": lbl}, "spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": img.Image()}}}}},
		}}
		must(t, c.Create(ctx, ro))
		// Argo Rollouts writes observedGeneration as a string; a canary
		// step not promoted yet.
		ro.Object["status"] = map[string]any{"observedGeneration": "1", "currentPodHash": "new", "stableRS": "old", "updatedReplicas": int64(1)}
		must(t, c.Status().Update(ctx, ro))
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img.Image()}}}}
		own := metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", UID: ro.GetUID(), Controller: ptr.To(true)}
		p := w.podOf(&tpl, map[string]string{health.LabelRolloutsPodTemplate: "new"}, own, "web-new", node)
		w.kubelet(p, 0, map[string]string{"app": img.Repo + "@" + img.Children["linux/arm64/v8"]})
		// Pods are watched; the Rollout is read uncached at each check.
		w.waitFor("web", v1alpha1.ReasonRolloutInProgress, func(st v1alpha1.AcceptanceStatus) bool {
			return strings.Contains(st.Workloads[0].Message, "not promoted")
		})
		must(t, c.Get(ctx, clientKey(ro), ro))
		must(t, unstructured.SetNestedField(ro.Object, "new", "status", "stableRS"))
		must(t, c.Status().Update(ctx, ro))
		// No watch on Rollouts: the Pod's next change (or the pending
		// requeue) brings the controller back.
		_, st := w.waitReason("web", v1alpha1.ReasonVerified)
		if o := observed(t, st); st.Workloads[0].Revision != "new" || o.Match != v1alpha1.MatchIndexChild {
			t.Fatalf("status %+v", st.Workloads[0])
		}
	})

	t.Run("new revision rolls out", func(t *testing.T) {
		w := newWorld(ctx, t, c, "rollout")
		node := w.node("amd64", "linux", "amd64")
		w.acceptance("web", "web", app(img.Image()))
		d, rs := w.deployment("web", 1, app(img.Image()))
		w.kubelet(w.pod(rs, "web-1", node), 0, map[string]string{"app": img.Repo + "@" + img.Index})
		w.waitReason("web", v1alpha1.ReasonVerified)
		// A new template: generation 2 not observed yet.
		must(t, c.Get(ctx, clientKey(d), d))
		d.Spec.Template.Annotations = map[string]string{"restartedAt": "now"}
		must(t, c.Update(ctx, d))
		w.waitReason("web", v1alpha1.ReasonRolloutInProgress)
		// The controller made the new ReplicaSet, the old Pod still runs.
		rs2 := w.replicaSet(d, "h2")
		w.deploymentStatus(d, 1)
		p2 := w.pod(rs2, "web-2", node)
		w.kubelet(p2, 0, map[string]string{"app": img.Repo + "@" + img.Index})
		_, _, cond := w.ready("web")
		if cond.Reason == v1alpha1.ReasonVerified && strings.Contains(cond.Message, "h1") {
			t.Fatalf("verified the old revision: %s", cond.Message)
		}
		w.waitReason("web", v1alpha1.ReasonRolloutInProgress)
		// The old Pod terminates (deleted): only the current revision runs.
		old := w.podByName("web-1")
		must(t, c.Delete(ctx, old))
		_, st := w.waitReason("web", v1alpha1.ReasonVerified)
		if st.Workloads[0].Revision != "h2" || st.Workloads[0].Pods != 1 {
			t.Fatalf("status %+v", st.Workloads[0])
		}
	})
}

// rolloutCRD is enough of Argo Rollouts' CRD for the API server to serve
// Rollout objects with a status subresource.
const rolloutCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: rollouts.argoproj.io
spec:
  group: argoproj.io
  names: {kind: Rollout, listKind: RolloutList, plural: rollouts, singular: rollout}
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
