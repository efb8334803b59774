package health

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// maxObserved bounds the distinct imageIDs kept per container in status.
const maxObserved = 8

// ReadStatus decodes an Acceptance's status (zero when absent).
func ReadStatus(u *unstructured.Unstructured) (v1alpha1.AcceptanceStatus, error) {
	var s v1alpha1.AcceptanceStatus
	m, ok := u.Object["status"].(map[string]any)
	if !ok {
		return s, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return s, fmt.Errorf("reading status of Acceptance %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("reading status of Acceptance %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return s, nil
}

// NewStatus turns a report into the status to write, keeping the transition
// times and verifiedAt of prev when nothing changed.
func NewStatus(rep *Report, prev v1alpha1.AcceptanceStatus, now time.Time) v1alpha1.AcceptanceStatus {
	s := v1alpha1.AcceptanceStatus{
		ObservedGeneration: rep.Generation, RenderedHash: rep.RenderedHash, Conditions: append([]metav1.Condition(nil), prev.Conditions...),
	}
	t := metav1.NewTime(now.UTC().Truncate(time.Second))
	ready := metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: rep.Reason, Message: truncate(rep.Message, 4096),
		ObservedGeneration: rep.Generation, LastTransitionTime: t,
	}
	reconciling := metav1.Condition{
		Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: rep.Reason, ObservedGeneration: rep.Generation, LastTransitionTime: t,
	}
	stalled := metav1.Condition{
		Type: v1alpha1.ConditionStalled, Status: metav1.ConditionFalse, Reason: rep.Reason, ObservedGeneration: rep.Generation, LastTransitionTime: t,
	}
	switch rep.Outcome {
	case Verified:
		ready.Status = metav1.ConditionTrue
		if prev.VerifiedAt != nil && prev.ObservedGeneration == rep.Generation && prev.RenderedHash == rep.RenderedHash && readyTrue(prev) {
			s.VerifiedAt = prev.VerifiedAt
		} else {
			s.VerifiedAt = &t
		}
	case Mismatch:
		stalled.Status, stalled.Message = metav1.ConditionTrue, ready.Message
	default: // Pending, Unverifiable: not decided, the verifier tries again.
		reconciling.Status, reconciling.Message = metav1.ConditionTrue, ready.Message
		if rep.CheckPhase {
			ready.Status = metav1.ConditionUnknown // the images are verified, the checks not decided
		}
	}
	s.SoakStartedAt, s.Checks = rep.SoakStartedAt, rep.Checks
	for _, c := range []metav1.Condition{ready, reconciling, stalled} {
		meta.SetStatusCondition(&s.Conditions, c)
	}
	for _, w := range rep.Workloads {
		ws := v1alpha1.WorkloadStatus{
			Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Outcome: w.Outcome, Revision: w.Revision, Pods: w.Pods, Message: truncate(w.Message, 1024),
		}
		if !w.Found {
			ws.Message = "not found"
		}
		for _, c := range w.Containers {
			cs := v1alpha1.ContainerStatus{Name: c.Name, Digest: c.Digest, Outcome: c.Outcome, Observed: c.Observed}
			if len(cs.Observed) > maxObserved {
				cs.Observed = cs.Observed[:maxObserved]
			}
			for i := range cs.Observed {
				cs.Observed[i].Message = truncate(cs.Observed[i].Message, 512)
			}
			ws.Containers = append(ws.Containers, cs)
		}
		s.Workloads = append(s.Workloads, ws)
	}
	return s
}

func readyTrue(s v1alpha1.AcceptanceStatus) bool {
	return meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionReady)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// SetStatus stores s into the Acceptance object and reports whether that
// changed it.
func SetStatus(u *unstructured.Unstructured, s v1alpha1.AcceptanceStatus) (bool, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
	if err != nil {
		return false, fmt.Errorf("encoding status of Acceptance %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	old, _ := u.Object["status"].(map[string]any)
	if old != nil && equality.Semantic.DeepEqual(normalize(old), normalize(m)) {
		return false, nil
	}
	u.Object["status"] = m
	return true, nil
}

// normalize makes JSON numbers comparable (int64 from the API server,
// float64 from encoding/json).
func normalize(m map[string]any) map[string]any {
	raw, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
