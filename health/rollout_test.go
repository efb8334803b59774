package health

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

func deployment(gen, observed int64, replicas, updated, total int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("d-uid"), Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template("r/web@" + dg('1'))},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, Replicas: total},
	}
}

func replicaSet(d *appsv1.Deployment, hash, image string) appsv1.ReplicaSet {
	tpl := template(image)
	tpl.Labels[LabelPodTemplateHash] = hash
	return appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + hash, Labels: map[string]string{LabelPodTemplateHash: hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Template: tpl},
	}
}

func pod(name string, lbls map[string]string, terminating bool) corev1.Pod {
	l := map[string]string{"app": "web"}
	for k, v := range lbls {
		l[k] = v
	}
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: l}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

func TestDeploymentRevision(t *testing.T) {
	t.Parallel()
	cur := map[string]string{LabelPodTemplateHash: "new"}
	old := map[string]string{LabelPodTemplateHash: "old"}
	tests := []struct {
		name     string
		d        *appsv1.Deployment
		pods     []corev1.Pod
		complete bool
		current  int
		msg      string
	}{
		{"complete", deployment(2, 2, 2, 2, 2), []corev1.Pod{pod("a", cur, false), pod("b", cur, false)}, true, 2, ""},
		{"terminating old Pod ignored", deployment(2, 2, 2, 2, 2), []corev1.Pod{pod("a", cur, false), pod("b", cur, false), pod("c", old, true)}, true, 2, ""},
		{"generation not observed", deployment(3, 2, 2, 2, 2), []corev1.Pod{pod("a", cur, false), pod("b", cur, false)}, false, 2, "generation 3 not observed"},
		{"replicas not updated", deployment(2, 2, 2, 1, 2), []corev1.Pod{pod("a", cur, false)}, false, 1, "1 of 2 replicas updated"},
		{"old replicas", deployment(2, 2, 2, 2, 3), nil, false, 0, "old replicas"},
		{"old Pod still running", deployment(2, 2, 2, 2, 2), []corev1.Pod{pod("a", cur, false), pod("b", cur, false), pod("c", old, false)}, false, 2, "older revision"},
		{"Pods missing", deployment(2, 2, 2, 2, 2), []corev1.Pod{pod("a", cur, false)}, false, 1, "1 of 2 Pods"},
		{"other app's Pods", deployment(2, 2, 1, 1, 1), []corev1.Pod{pod("a", cur, false), {ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"app": "db"}}}}, true, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rss := []appsv1.ReplicaSet{replicaSet(tt.d, "old", "r/web@"+dg('0')), replicaSet(tt.d, "new", "r/web@"+dg('1'))}
			rev, err := DeploymentRevision(tt.d, rss)
			if err != nil {
				t.Fatal(err)
			}
			if rev.Value != "new" {
				t.Fatalf("current hash %q, want new", rev.Value)
			}
			pr := SelectPods(rev, tt.pods)
			if pr.Complete != tt.complete || len(pr.Current) != tt.current || !strings.Contains(pr.Message, tt.msg) {
				t.Fatalf("SelectPods = complete %v, %d current, %q", pr.Complete, len(pr.Current), pr.Message)
			}
		})
	}
	t.Run("no ReplicaSet of the template", func(t *testing.T) {
		d := deployment(1, 1, 1, 1, 1)
		rev, _ := DeploymentRevision(d, []appsv1.ReplicaSet{replicaSet(d, "old", "r/web@"+dg('0'))})
		if rev.Complete || !strings.Contains(rev.Message, "no ReplicaSet") {
			t.Fatalf("%+v", rev)
		}
	})
	t.Run("ReplicaSet of another owner", func(t *testing.T) {
		d := deployment(1, 1, 1, 1, 1)
		rs := replicaSet(d, "new", "r/web@"+dg('1'))
		rs.OwnerReferences[0].UID = "other"
		if rev, _ := DeploymentRevision(d, []appsv1.ReplicaSet{rs}); rev.Complete {
			t.Fatalf("%+v", rev)
		}
	})
}

func TestStatefulSetDaemonSetJobRollout(t *testing.T) {
	t.Parallel()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 4}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(2)), Selector: sel},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 4, UpdateRevision: "db-2", UpdatedReplicas: 2}}
	rev, err := StatefulSetRevision(s)
	if err != nil || !rev.Complete || rev.Label != LabelControllerRevisionHash || rev.Value != "db-2" {
		t.Fatalf("%+v %v", rev, err)
	}
	pr := SelectPods(rev, []corev1.Pod{pod("db-0", map[string]string{LabelControllerRevisionHash: "db-2"}, false), pod("db-1", map[string]string{LabelControllerRevisionHash: "db-1"}, false)})
	if pr.Complete || !strings.Contains(pr.Message, "older revision") {
		t.Fatalf("%+v", pr)
	}
	s.Status.UpdatedReplicas = 1
	if rev, _ := StatefulSetRevision(s); rev.Complete {
		t.Fatal("StatefulSet with 1 of 2 updated is complete")
	}

	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", UID: "ds", Generation: 2}, Spec: appsv1.DaemonSetSpec{Selector: sel},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}}
	own := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}
	revs := []appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-1", Labels: map[string]string{LabelControllerRevisionHash: "h1"}, OwnerReferences: own}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "agent-2", Labels: map[string]string{LabelControllerRevisionHash: "h2"}, OwnerReferences: own}, Revision: 2},
	}
	rev, err = DaemonSetRevision(ds, revs)
	if err != nil || !rev.Complete || rev.Value != "h2" {
		t.Fatalf("%+v %v", rev, err)
	}

	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate"}, Spec: batchv1.JobSpec{Selector: sel}}
	rev, err = JobRevision(j)
	if err != nil {
		t.Fatal(err)
	}
	done := pod("m", nil, false)
	done.Status.Phase = corev1.PodSucceeded
	if pr := SelectPods(rev, []corev1.Pod{done}); !pr.Complete || len(pr.Current) != 1 {
		t.Fatalf("finished Job Pod: %+v", pr)
	}
	if pr := SelectPods(rev, nil); pr.Complete {
		t.Fatal("Job without Pods is complete")
	}
	if _, err := JobRevision(&batchv1.Job{}); err == nil {
		t.Fatal("Job without selector accepted")
	}
}

func TestArgoRolloutRevision(t *testing.T) {
	t.Parallel()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "generation": int64(5)},
		"spec":     map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}},
		"status":   map[string]any{"observedGeneration": "5", "currentPodHash": "abc", "stableRS": "abc", "updatedReplicas": int64(3)},
	}}
	rev, err := ArgoRolloutRevision(u)
	if err != nil || !rev.Complete || rev.Label != LabelRolloutsPodTemplate || rev.Value != "abc" || rev.Desired != 3 {
		t.Fatalf("%+v %v", rev, err)
	}
	_ = unstructured.SetNestedField(u.Object, "old", "status", "stableRS")
	if rev, _ := ArgoRolloutRevision(u); rev.Complete || !strings.Contains(rev.Message, "not promoted") {
		t.Fatalf("canary in progress: %+v", rev)
	}
	_ = unstructured.SetNestedField(u.Object, "abc", "status", "stableRS")
	_ = unstructured.SetNestedField(u.Object, "4", "status", "observedGeneration")
	if rev, _ := ArgoRolloutRevision(u); rev.Complete {
		t.Fatalf("stale observedGeneration: %+v", rev)
	}
}
