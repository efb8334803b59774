package breakglass

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/render"
)

func deployment(replicas int64, memory string) map[string]any {
	c := map[string]any{"name": "web", "image": "r/web@sha256:" + strings.Repeat("a", 64)}
	if memory != "" {
		c["resources"] = map[string]any{"limits": map[string]any{"memory": memory}}
	}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "prod"},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{
			"spec": map[string]any{"containers": []any{c}}}},
	}
}

func mf(manager, sub, fields string) map[string]any {
	return map[string]any{"manager": manager, "operation": "Apply", "subresource": sub, "fieldsType": "FieldsV1", "fieldsV1": json.RawMessage(fields)}
}

func TestCompareClassifies(t *testing.T) {
	t.Parallel()
	before := render.Object{Map: deployment(2, "")}
	live := deployment(5, "512Mi")
	spec := live["spec"].(map[string]any)
	spec["progressDeadlineSeconds"] = float64(600) // defaulted: no manager owns it
	live["status"] = map[string]any{"replicas": float64(5)}
	live["metadata"].(map[string]any)["annotations"] = map[string]any{"deployment.kubernetes.io/revision": "3"}
	live["metadata"].(map[string]any)["managedFields"] = []any{
		mf("argocd-controller", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`),
		mf("kube-controller-manager", "scale", `{"f:spec":{"f:replicas":{}}}`),
		mf("kubectl-edit", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:resources":{"f:limits":{"f:memory":{}}}}}}}}}`),
		mf("kube-controller-manager", "", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`),
		mf("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`),
	}
	var asJSON map[string]any
	b, _ := json.Marshal(live)
	if err := json.Unmarshal(b, &asJSON); err != nil {
		t.Fatal(err)
	}
	id := Key(before.ID())
	c := Compare{Before: []render.Object{before}, Proposed: []render.Object{before}, Live: map[render.ID]map[string]any{id: asJSON},
		ControllerManagers: DefaultControllerManagers, OtherWriters: DefaultOtherWriters, Temporary: DefaultTemporary}
	changes, err := c.Run()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Class{}
	for _, ch := range changes {
		got[ch.Path] = ch.Class
	}
	want := map[string]Class{
		"spec.replicas": OtherWriter,
		`spec.template.spec.containers[{"name":"web"}].resources.limits.memory`: Permanent,
	}
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for p, cl := range want {
		if got[p] != cl {
			t.Fatalf("%s: %s, want %s (all: %v)", p, got[p], cl, got)
		}
	}
	patches := Patches(changes)
	SetAPIVersion(patches, c.Before)
	if len(patches) != 1 {
		t.Fatalf("patches %v", patches)
	}
	pj, _ := json.Marshal(patches[0].Map)
	if string(pj) != `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[{"name":"web","resources":{"limits":{"memory":"512Mi"}}}]}}}}` {
		t.Fatalf("patch %s", pj)
	}

	// Already in the proposed desired state; and a desired state that moved.
	c.Proposed = []render.Object{{Map: deployment(2, "512Mi")}}
	changes, _ = c.Run()
	for _, ch := range changes {
		if strings.Contains(ch.Path, "memory") && ch.Class != AlreadyDesired {
			t.Fatalf("want already-desired: %s", ch)
		}
	}
	c.Proposed = []render.Object{{Map: deployment(2, "1Gi")}}
	changes, _ = c.Run()
	for _, ch := range changes {
		if strings.Contains(ch.Path, "memory") && ch.Class != Conflict {
			t.Fatalf("want conflict: %s", ch)
		}
	}
	// A temporary pattern.
	c.Proposed = []render.Object{before}
	c.Temporary = []string{"Deployment/web:spec.template.spec.containers*"}
	changes, _ = c.Run()
	for _, ch := range changes {
		if strings.Contains(ch.Path, "memory") && ch.Class != Temporary {
			t.Fatalf("want temporary: %s", ch)
		}
	}
}

func TestManagerPresentAtPauseIsAnotherWriter(t *testing.T) {
	t.Parallel()
	before := render.Object{Map: deployment(2, "")}
	live := deployment(2, "512Mi")
	live["metadata"].(map[string]any)["managedFields"] = []any{
		mf("memory-operator", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:resources":{"f:limits":{"f:memory":{}}}}}}}}}`),
	}
	b, _ := json.Marshal(live)
	var lj map[string]any
	_ = json.Unmarshal(b, &lj)
	c := Compare{Before: []render.Object{before}, Proposed: []render.Object{before}, Live: map[render.ID]map[string]any{Key(before.ID()): lj},
		AtPause: map[string][]metav1.ManagedFieldsEntry{"Deployment prod/web": {{Manager: "memory-operator"}}}}
	changes, err := c.Run()
	if err != nil || len(changes) != 1 || changes[0].Class != OtherWriter {
		t.Fatalf("%v %v", changes, err)
	}
}

func TestRecordRoundTripAndBadInput(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := &Record{SchemaVersion: SchemaVersion, App: "web", Environment: "production", Controller: ArgoCD, State: Paused,
		Object:   Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "web-production", ResourceVersion: "7"},
		Operator: "alice", Ticket: "INC-1", PausedAt: now, ExpiresAt: now.Add(time.Hour), SourceRevision: strings.Repeat("a", 40)}
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("r.yaml", data)
	if err != nil || got.Ticket != "INC-1" || !got.Active() || got.Expired(now) || !got.Expired(now.Add(2*time.Hour)) {
		t.Fatalf("%+v %v", got, err)
	}
	for name, bad := range map[string]string{
		"unknown field":                strings.Replace(string(data), "ticket:", "tikket:", 1),
		"no ticket":                    strings.Replace(string(data), "ticket: INC-1", "ticket: \"\"", 1),
		"bad state":                    strings.Replace(string(data), "state: PAUSED", "state: GONE", 1),
		"forced resume without reason": strings.Replace(string(data), "state: PAUSED", "state: RESUMED\nresume: {at: \"2026-11-29T13:00:00Z\", by: bob, force: true}", 1),
	} {
		if _, err := Parse("r.yaml", []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
