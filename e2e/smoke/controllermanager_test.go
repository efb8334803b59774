//go:build e2e

package smoke

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestControllerManager: the real kube-controller-manager's deployment and
// replicaset controllers turn a Deployment into a ReplicaSet and Pods, which
// the PLAYED kubelet (testenv.StartKubelet: no container runtime here) binds
// to its Node and reports running; the Deployment turns Available with every
// replica updated. A new image digest rolls out: new ReplicaSet, the old one
// scaled to 0, its Pods deleted (graceful deletion finished by the played
// kubelet), and every Pod's imageID is the new digest.
func TestControllerManager(t *testing.T) {
	testenv.RequireControllerManager(t) // skip (fail in CI) before any setup
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	ctx := testContext(t, 4*time.Minute)
	testenv.StartControllerManager(ctx, t, api)
	c := api.Client
	const ns, repo = "kcm", "127.0.0.1:5001/demo/app"
	digestA := "sha256:" + strings.Repeat("a", 64)
	digestB := "sha256:" + strings.Repeat("b", 64)
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	testenv.StartKubelet(ctx, t, c, testenv.KubeletOptions{Namespaces: []string{ns}})

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: repo + ":v1@" + digestA}}},
			},
		},
	}
	must(t, c.Create(ctx, d))
	rsA := rolledOut(t, c, d, "docker-pullable://"+repo+"@"+digestA)

	// Change the digest: the deployment controller rolls out a new ReplicaSet.
	must(t, c.Get(ctx, client.ObjectKeyFromObject(d), d))
	d.Spec.Template.Spec.Containers[0].Image = repo + ":v2@" + digestB
	must(t, c.Update(ctx, d))
	rsB := rolledOut(t, c, d, "docker-pullable://"+repo+"@"+digestB)
	if rsB.Name == rsA.Name {
		t.Fatalf("rollout of a new digest reused ReplicaSet %s", rsA.Name)
	}
	old := &appsv1.ReplicaSet{}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(rsA), old))
	if r := ptr.Deref(old.Spec.Replicas, -1); r != 0 || old.Status.Replicas != 0 {
		t.Fatalf("old ReplicaSet %s: spec.replicas %d, status.replicas %d, want 0", old.Name, r, old.Status.Replicas)
	}
}

// rolledOut waits for the Deployment d's current template rolled out and
// checks that its Pods belong to one ReplicaSet of the Deployment, made by the
// controllers, and run imageID; it returns that ReplicaSet.
func rolledOut(t *testing.T, c client.Client, d *appsv1.Deployment, imageID string) *appsv1.ReplicaSet {
	t.Helper()
	dep, pods, err := testenv.WaitRolledOut(t.Context(), c, d.Namespace, d.Name, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !available(dep) {
		t.Fatalf("Deployment %s rolled out but not Available: %+v", d.Name, dep.Status.Conditions)
	}
	rs := &appsv1.ReplicaSet{}
	for _, p := range pods {
		owner := metav1.GetControllerOf(&p)
		if owner == nil || owner.Kind != "ReplicaSet" {
			t.Fatalf("Pod %s: controller %v, want a ReplicaSet", p.Name, owner)
		}
		must(t, c.Get(t.Context(), client.ObjectKey{Namespace: p.Namespace, Name: owner.Name}, rs))
		if o := metav1.GetControllerOf(rs); o == nil || o.UID != dep.UID {
			t.Fatalf("ReplicaSet %s: controller %v, want Deployment %s", rs.Name, o, dep.UID)
		}
		if p.Spec.NodeName == "" || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ImageID != imageID {
			t.Fatalf("Pod %s: node %q, container statuses %+v, want imageID %s", p.Name, p.Spec.NodeName, p.Status.ContainerStatuses, imageID)
		}
	}
	t.Logf("Deployment %s: %d/%d updated and available, ReplicaSet %s, Pods run %s",
		dep.Name, dep.Status.UpdatedReplicas, *dep.Spec.Replicas, rs.Name, imageID)
	return rs
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
