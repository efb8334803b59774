package health

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Labels that name a Pod's revision.
const (
	LabelPodTemplateHash        = "pod-template-hash"
	LabelControllerRevisionHash = "controller-revision-hash"
	LabelRolloutsPodTemplate    = "rollouts-pod-template-hash"
	LabelJobControllerUID       = "batch.kubernetes.io/controller-uid"
)

// Revision is the state of a workload's rollout and how to find the Pods of
// its current revision.
type Revision struct {
	// Complete: the controller has caught up with the spec and every replica
	// is of the current revision (the Pods are checked by [SelectPods]).
	Complete bool
	// Message says what is still in progress, without naming the workload
	// (the caller does, once).
	Message string
	// Selector selects the workload's Pods.
	Selector labels.Selector
	// Label and Value: a Pod of the current revision has Labels[Label] ==
	// Value. An empty Label means every selected Pod is current.
	Label, Value string
	// Desired is how many Pods of the current revision must run (-1: do
	// not count, as for a DaemonSet whose count the status gives).
	Desired int32
	// Finished counts Pods that ran to completion (Jobs).
	Finished bool
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func selector(ls *metav1.LabelSelector, what string) (labels.Selector, error) {
	if ls == nil {
		return nil, fmt.Errorf("%s has no spec.selector", what)
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("%s spec.selector: %w", what, err)
	}
	if s.Empty() {
		return nil, fmt.Errorf("%s has an empty spec.selector", what)
	}
	return s, nil
}

// DeploymentRevision finds the current ReplicaSet of a Deployment among rss
// (the one it owns whose template equals the Deployment's, ignoring
// pod-template-hash, as the deployment controller decides) and reports
// whether the rollout caught up.
func DeploymentRevision(d *appsv1.Deployment, rss []appsv1.ReplicaSet) (Revision, error) {
	what := "Deployment " + d.Namespace + "/" + d.Name
	sel, err := selector(d.Spec.Selector, what)
	if err != nil {
		return Revision{}, err
	}
	rev := Revision{Selector: sel, Label: LabelPodTemplateHash, Desired: replicas(d.Spec.Replicas)}
	var current *appsv1.ReplicaSet
	for i := range rss {
		rs := &rss[i]
		if !metav1.IsControlledBy(rs, d) || rs.DeletionTimestamp != nil {
			continue
		}
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			current = rs
			break
		}
	}
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		rev.Message = fmt.Sprintf("generation %d not observed yet (observed %d)", d.Generation, d.Status.ObservedGeneration)
	case current == nil:
		rev.Message = "no ReplicaSet of the current template yet"
	case current.Labels[LabelPodTemplateHash] == "":
		rev.Message = fmt.Sprintf("ReplicaSet %s has no %s label", current.Name, LabelPodTemplateHash)
	case d.Status.UpdatedReplicas < rev.Desired:
		rev.Message = fmt.Sprintf("%d of %d replicas updated", d.Status.UpdatedReplicas, rev.Desired)
	case d.Status.Replicas > d.Status.UpdatedReplicas:
		rev.Message = fmt.Sprintf("%d old replicas pending termination", d.Status.Replicas-d.Status.UpdatedReplicas)
	default:
		rev.Complete = true
	}
	if current != nil {
		rev.Value = current.Labels[LabelPodTemplateHash]
	}
	if rev.Value == "" {
		rev.Complete = false
	}
	return rev, nil
}

func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, LabelPodTemplateHash)
	delete(b.Labels, LabelPodTemplateHash)
	return apiequality.Semantic.DeepEqual(a, b)
}

// StatefulSetRevision reports a StatefulSet's rollout: the Pods of
// status.updateRevision, all replicas updated.
func StatefulSetRevision(s *appsv1.StatefulSet) (Revision, error) {
	what := "StatefulSet " + s.Namespace + "/" + s.Name
	sel, err := selector(s.Spec.Selector, what)
	if err != nil {
		return Revision{}, err
	}
	rev := Revision{Selector: sel, Label: LabelControllerRevisionHash, Value: s.Status.UpdateRevision, Desired: replicas(s.Spec.Replicas)}
	switch {
	case s.Status.ObservedGeneration < s.Generation:
		rev.Message = fmt.Sprintf("generation %d not observed yet (observed %d)", s.Generation, s.Status.ObservedGeneration)
	case s.Status.UpdateRevision == "":
		rev.Message = "no update revision yet"
	case s.Status.UpdatedReplicas < rev.Desired:
		rev.Message = fmt.Sprintf("%d of %d replicas updated", s.Status.UpdatedReplicas, rev.Desired)
	default:
		rev.Complete = true
	}
	return rev, nil
}

// DaemonSetRevision reports a DaemonSet's rollout: the current revision is
// the ControllerRevision it owns with the highest revision number.
func DaemonSetRevision(ds *appsv1.DaemonSet, revs []appsv1.ControllerRevision) (Revision, error) {
	what := "DaemonSet " + ds.Namespace + "/" + ds.Name
	sel, err := selector(ds.Spec.Selector, what)
	if err != nil {
		return Revision{}, err
	}
	rev := Revision{Selector: sel, Label: LabelControllerRevisionHash, Desired: ds.Status.DesiredNumberScheduled}
	var cur *appsv1.ControllerRevision
	for i := range revs {
		r := &revs[i]
		if !metav1.IsControlledBy(r, ds) {
			continue
		}
		if cur == nil || r.Revision > cur.Revision {
			cur = r
		}
	}
	if cur != nil {
		rev.Value = cur.Labels[LabelControllerRevisionHash]
	}
	switch {
	case ds.Status.ObservedGeneration < ds.Generation:
		rev.Message = fmt.Sprintf("generation %d not observed yet (observed %d)", ds.Generation, ds.Status.ObservedGeneration)
	case rev.Value == "":
		rev.Message = "no ControllerRevision of the current template yet"
	case ds.Status.UpdatedNumberScheduled < ds.Status.DesiredNumberScheduled:
		rev.Message = fmt.Sprintf("%d of %d nodes updated", ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled)
	default:
		rev.Complete = true
	}
	return rev, nil
}

// JobRevision reports a Job: its template is immutable, so every Pod it
// made is current; it is complete once it has Pods (checked by SelectPods).
func JobRevision(j *batchv1.Job) (Revision, error) {
	what := "Job " + j.Namespace + "/" + j.Name
	sel, err := selector(j.Spec.Selector, what)
	if err != nil {
		return Revision{}, err
	}
	return Revision{Selector: sel, Complete: true, Desired: 1, Finished: true}, nil
}

// ArgoRolloutRevision reports an Argo Rollouts Rollout (argoproj.io/v1alpha1,
// read as unstructured): generation observed, status.currentPodHash fully
// promoted (stableRS == currentPodHash) and every replica updated; current
// Pods carry rollouts-pod-template-hash = currentPodHash.
func ArgoRolloutRevision(u *unstructured.Unstructured) (Revision, error) {
	what := "Rollout " + u.GetNamespace() + "/" + u.GetName()
	var ls metav1.LabelSelector
	if m, ok, _ := unstructured.NestedMap(u.Object, "spec", "selector"); ok {
		if err := fromUnstructured(m, &ls); err != nil {
			return Revision{}, fmt.Errorf("%s spec.selector: %w", what, err)
		}
	}
	sel, err := selector(&ls, what)
	if err != nil {
		return Revision{}, err
	}
	desired := int32(1)
	if n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
		desired = int32(n)
	}
	hash, _, _ := unstructured.NestedString(u.Object, "status", "currentPodHash")
	stable, _, _ := unstructured.NestedString(u.Object, "status", "stableRS")
	updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
	observed := nestedGeneration(u.Object, "status", "observedGeneration")
	rev := Revision{Selector: sel, Label: LabelRolloutsPodTemplate, Value: hash, Desired: desired}
	switch {
	case observed < u.GetGeneration():
		rev.Message = fmt.Sprintf("generation %d not observed yet (observed %d)", u.GetGeneration(), observed)
	case hash == "":
		rev.Message = "no currentPodHash yet"
	case stable != hash:
		rev.Message = fmt.Sprintf("%s not promoted yet (stable %s)", hash, stable)
	case int32(updated) < desired:
		rev.Message = fmt.Sprintf("%d of %d replicas updated", updated, desired)
	default:
		rev.Complete = true
	}
	return rev, nil
}

// nestedGeneration reads an observedGeneration that Argo Rollouts writes as
// a string and others as an integer.
func nestedGeneration(obj map[string]any, fields ...string) int64 {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	if !ok {
		return 0
	}
	switch t := v.(type) {
	case int64:
		return t
	case float64:
		return int64(t)
	case string:
		n, _ := strconv.ParseInt(t, 10, 64)
		return n
	}
	return 0
}

// PodRevision is what [SelectPods] found.
type PodRevision struct {
	// Current are the running (or, for Jobs, finished) Pods of the current
	// revision, terminating Pods excluded.
	Current []*corev1.Pod
	// Complete: Current has Desired Pods and no Pod of another revision runs.
	Complete bool
	Message  string
}

// SelectPods picks the Pods of the current revision among pods (all of the
// workload's namespace) and checks that only they run.
func SelectPods(rev Revision, pods []corev1.Pod) PodRevision {
	var out PodRevision
	old := 0
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || !rev.Selector.Matches(labels.Set(p.Labels)) {
			continue // terminating Pods are ignored
		}
		if p.Status.Phase == corev1.PodFailed || (p.Status.Phase == corev1.PodSucceeded && !rev.Finished) {
			continue
		}
		if rev.Label != "" && p.Labels[rev.Label] != rev.Value {
			old++
			continue
		}
		out.Current = append(out.Current, p)
	}
	switch {
	case !rev.Complete:
		out.Message = rev.Message
	case old > 0:
		out.Message = fmt.Sprintf("%d Pods of an older revision still run", old)
	case rev.Desired >= 0 && int32(len(out.Current)) < rev.Desired:
		out.Message = fmt.Sprintf("%d of %d Pods of the current revision exist", len(out.Current), rev.Desired)
	default:
		out.Complete = true
	}
	return out
}
