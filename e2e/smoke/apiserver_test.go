//go:build e2e

package smoke

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/testenv"
)

const (
	image   = "127.0.0.1:5001/demo/app:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	imageID = "127.0.0.1:5001/demo/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	hash    = "sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
)

func acceptance(ns, name, renderedHash string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "throughline.dev/v1alpha1", "kind": "Acceptance",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"app": "web", "environment": "staging", "renderedHash": renderedHash,
			"workloads": []any{map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": "web",
				"containers": []any{map[string]any{"name": "web", "image": image, "digest": image[strings.Index(image, "@")+1:]}},
			}},
		},
	}}
}

// TestAPIServer: the real kube-apiserver serves the Acceptance CRD of
// deploy/crds (schema enforced, status subresource) and the workload kinds,
// and a Pod's imageID written through the status subresource (as a kubelet
// would) reads back.
func TestAPIServer(t *testing.T) {
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	ctx := testContext(t, 2*time.Minute)
	c := api.Client
	const ns = "demo"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	// The CRD's schema is enforced by the server: a malformed hash is refused.
	err := c.Create(ctx, acceptance(ns, "bad", "sha256:nothex"))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("Acceptance with a malformed renderedHash: got %v, want Invalid", err)
	}
	acc := acceptance(ns, "web", hash)
	must(t, c.Create(ctx, acc))

	// Status goes through the status subresource only.
	acc.Object["status"] = map[string]any{
		"renderedHash": hash,
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "Verified", "message": "imageIDs match",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}},
	}
	must(t, c.Status().Update(ctx, acc))
	got := &unstructured.Unstructured{}
	got.SetAPIVersion("throughline.dev/v1alpha1")
	got.SetKind("Acceptance")
	must(t, c.Get(ctx, client.ObjectKeyFromObject(acc), got))
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	if len(conds) != 1 || conds[0].(map[string]any)["status"] != "True" {
		t.Fatalf("Acceptance status not stored: %v", got.Object["status"])
	}
	// A write of the main resource does not change status (subresource semantics).
	got.Object["status"] = map[string]any{"renderedHash": "sha256:" + strings.Repeat("0", 64)}
	must(t, c.Update(ctx, got))
	after := got.DeepCopy()
	must(t, c.Get(ctx, client.ObjectKeyFromObject(acc), after))
	if h, _, _ := unstructured.NestedString(after.Object, "status", "renderedHash"); h != hash {
		t.Fatalf("status changed through the main resource: renderedHash=%q", h)
	}

	// Deployment -> ReplicaSet -> Pod, as the controllers would create them.
	labels := map[string]string{"app": "web", "pod-template-hash": "5d4f8"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: podSpec},
		},
	}
	must(t, c.Create(ctx, dep))
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-5d4f8", Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec},
		},
	}
	must(t, c.Create(ctx, rs))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-5d4f8-x7k2p", Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}},
		},
		Spec: podSpec,
	}
	must(t, c.Create(ctx, pod))

	// Play kubelet: the imageID goes through the status subresource.
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "web", Image: image, ImageID: imageID, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}},
	}
	must(t, c.Status().Update(ctx, pod))
	gotPod := &corev1.Pod{}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(pod), gotPod))
	if len(gotPod.Status.ContainerStatuses) != 1 || gotPod.Status.ContainerStatuses[0].ImageID != imageID {
		t.Fatalf("Pod imageID not stored: %+v", gotPod.Status.ContainerStatuses)
	}
	if gotPod.OwnerReferences[0].UID != rs.UID {
		t.Fatalf("Pod owner = %+v, want ReplicaSet %s", gotPod.OwnerReferences, rs.UID)
	}
	// The real server validates: a Pod's containers cannot be changed.
	gotPod.Spec.Containers[0].Name = "renamed"
	if err := c.Update(ctx, gotPod); !apierrors.IsInvalid(err) {
		t.Fatalf("changing a Pod's container name: got %v, want Invalid", err)
	}

	// Play the deployment controller: rollout status via the subresource.
	gotDep := &appsv1.Deployment{}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(dep), gotDep))
	gotDep.Status = appsv1.DeploymentStatus{ObservedGeneration: gotDep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	must(t, c.Status().Update(ctx, gotDep))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(dep), gotDep))
	if gotDep.Status.UpdatedReplicas != 1 || gotDep.Status.ObservedGeneration != gotDep.Generation {
		t.Fatalf("Deployment status not stored: %+v", gotDep.Status)
	}
	t.Logf("Acceptance, Deployment %s, ReplicaSet %s, Pod %s with imageID %s", dep.UID, rs.UID, pod.UID, imageID)
}
