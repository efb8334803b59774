package v1alpha1_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// The Acceptance and its list are Kubernetes objects (generated DeepCopy).
var (
	_ runtime.Object = &v1alpha1.Acceptance{}
	_ runtime.Object = &v1alpha1.AcceptanceList{}
)

func TestGroupVersionKinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{v1alpha1.GroupVersion.String(), "throughline.dev/v1alpha1"},
		{v1alpha1.APIVersion, "throughline.dev/v1alpha1"},
		{v1alpha1.AcceptanceGVK().String(), "throughline.dev/v1alpha1, Kind=Acceptance"},
		{v1alpha1.AcceptanceListGVK().Kind, "AcceptanceList"},
		{v1alpha1.AcceptanceGVR().String(), "throughline.dev/v1alpha1, Resource=acceptances"},
		{v1alpha1.AllowListGVK().Kind, "AllowList"},
		{v1alpha1.PromotionPolicyGVK().Kind, "PromotionPolicy"},
		{v1alpha1.LabelApp, "throughline.dev/app"},
		{v1alpha1.LabelEnvironment, "throughline.dev/environment"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestDeepCopyIsDeep(t *testing.T) {
	t.Parallel()
	a := &v1alpha1.Acceptance{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Labels: map[string]string{v1alpha1.LabelApp: "checkout"}},
		Spec:       v1alpha1.AcceptanceSpec{App: "checkout", Workloads: []v1alpha1.Workload{{Kind: "Deployment", Name: "checkout", Containers: []v1alpha1.Container{{Name: "api"}}}}},
		Status: v1alpha1.AcceptanceStatus{Workloads: []v1alpha1.WorkloadStatus{{Containers: []v1alpha1.ContainerStatus{{
			Observed: []v1alpha1.ObservedImage{{ImageID: "r@sha256:1", Outcome: v1alpha1.OutcomeVerified, Match: v1alpha1.MatchExact}},
		}}}}},
	}
	b := a.DeepCopy()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("DeepCopy differs: %+v", b)
	}
	b.Labels[v1alpha1.LabelApp] = "other"
	b.Spec.Workloads[0].Containers[0].Name = "other"
	b.Status.Workloads[0].Containers[0].Observed[0].ImageID = "other"
	if a.Labels[v1alpha1.LabelApp] != "checkout" || a.Spec.Workloads[0].Containers[0].Name != "api" || a.Status.Workloads[0].Containers[0].Observed[0].ImageID != "r@sha256:1" {
		t.Errorf("DeepCopy shares memory with the original: %+v", a)
	}
}
