package breakglass

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/render"
)

// fromJSON decodes like the API client does (numbers as float64).
func fromJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return m
}

// The desired Deployment before the pause: one container with one port.
const desiredWeb = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod"},
 "spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"r/web@sha256:aa",
  "ports":[{"containerPort":8080,"protocol":"TCP"}]}]}}}}`

// The same Deployment live, after the incident, with managedFields as
// kube-apiserver writes them (FieldsV1: f: fields, k: keyed elements with
// the Key fields of the list's merge keys, v: set values, "." membership).
const liveWeb = `{"apiVersion":"apps/v1","kind":"Deployment",
 "metadata":{"name":"web","namespace":"prod","resourceVersion":"42","finalizers":["example.com/keep","backup.example.com/protect"],
  "annotations":{"deployment.kubernetes.io/revision":"3"},
  "managedFields":[
   {"manager":"argocd-controller","operation":"Apply","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},
     "f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}},
   {"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","subresource":"scale","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:replicas":{}}}},
   {"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}},
   {"manager":"kubectl-patch","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/keep\"":{}}},
     "f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{
      "f:ports":{"k:{\"containerPort\":9090,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},
      "f:resources":{"f:limits":{"f:memory":{}}}}}}}}}},
   {"manager":"backup-operator","operation":"Update","apiVersion":"apps/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:metadata":{"f:finalizers":{"v:\"backup.example.com/protect\"":{}}}}},
   {"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","subresource":"status","fieldsType":"FieldsV1","fieldsV1":
    {"f:status":{"f:replicas":{}}}}
  ]},
 "spec":{"replicas":5,"progressDeadlineSeconds":600,"template":{"spec":{"containers":[{"name":"web","image":"r/web@sha256:aa",
  "resources":{"limits":{"memory":"512Mi"}},
  "ports":[{"containerPort":8080,"protocol":"TCP"},{"containerPort":9090,"protocol":"TCP","name":"debug"}]}]}}},
 "status":{"replicas":5}}`

// A custom resource whose list has no merge Key: kube-apiserver tracks
// its elements by index (i:).
const desiredPipeline = `{"apiVersion":"ci.example.com/v1","kind":"Pipeline","metadata":{"name":"build","namespace":"prod"},
 "spec":{"steps":[{"image":"a"},{"image":"b"}]}}`

const livePipeline = `{"apiVersion":"ci.example.com/v1","kind":"Pipeline","metadata":{"name":"build","namespace":"prod",
  "managedFields":[
   {"manager":"kustomize-controller","operation":"Apply","apiVersion":"ci.example.com/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:steps":{}}}},
   {"manager":"kubectl-edit","operation":"Update","apiVersion":"ci.example.com/v1","fieldsType":"FieldsV1","fieldsV1":
    {"f:spec":{"f:steps":{"i:1":{"f:image":{}}}}}}]},
 "spec":{"steps":[{"image":"a"},{"image":"c"}]}}`

const (
	memoryPath  = `spec.template.spec.containers[{"name":"web"}].resources.limits.memory`
	port9090    = `spec.template.spec.containers[{"name":"web"}].ports[{"containerPort":9090,"protocol":"TCP"}]`
	finKeep     = `metadata.finalizers[="example.com/keep"]`
	finBackup   = `metadata.finalizers[="backup.example.com/protect"]`
	replicas    = "spec.replicas"
	stepImage   = "spec.steps[1].image"
	webObject   = "Deployment.apps prod/web"
	buildObject = "Pipeline.ci.example.com prod/build"
)

func TestCompareManagedFieldsShapes(t *testing.T) {
	t.Parallel()
	web, build := render.Object{Map: fromJSON(t, desiredWeb)}, render.Object{Map: fromJSON(t, desiredPipeline)}
	live := map[render.ID]map[string]any{Key(web.ID()): fromJSON(t, liveWeb), Key(build.ID()): fromJSON(t, livePipeline)}
	withMemory := func(v string) render.Object {
		o := fromJSON(t, desiredWeb)
		c := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["resources"] = map[string]any{"limits": map[string]any{"memory": v}}
		return render.Object{Map: o}
	}
	all := map[string]Class{
		replicas:                    OtherWriter, // HPA through the scale subresource
		memoryPath:                  Permanent,
		port9090 + ".containerPort": Permanent,
		port9090 + ".name":          Permanent,
		port9090 + ".protocol":      Permanent,
		finKeep:                     Permanent,
		finBackup:                   OtherWriter, // a --writer
		stepImage:                   Permanent,
		"":                          DeletedLive,
	}
	for _, tc := range []struct {
		name      string
		proposed  []render.Object
		temporary []string
		atPause   map[string][]metav1.ManagedFieldsEntry
		noLive    bool
		noWriter  bool             // backup-operator is not a --writer
		want      map[string]Class // path -> class, "" for the object itself
	}{
		{name: "every entry kind, nothing moved since the pause", want: without(all, "")},
		{name: "the base branch already has the memory limit", proposed: []render.Object{withMemory("512Mi"), build},
			want: with(without(all, ""), memoryPath, AlreadyDesired)},
		{name: "the base branch moved the memory limit elsewhere", proposed: []render.Object{withMemory("1Gi"), build},
			want: with(without(all, ""), memoryPath, Conflict)},
		{name: "a temporary pattern", proposed: []render.Object{web, build}, temporary: []string{"Deployment/web:spec.template.spec.containers*.resources.*"},
			want: with(without(all, ""), memoryPath, Temporary)},
		{name: "a manager present at the pause is another writer", proposed: []render.Object{web, build},
			atPause: map[string][]metav1.ManagedFieldsEntry{"Pipeline prod/build": {{Manager: "ci-operator"}, {Manager: "kubectl-edit"}},
				"Deployment prod/web": {{Manager: "backup-operator"}}},
			noWriter: true, want: without(all, "")}, // kubectl* stays an operator even when present at the pause
		{name: "the pipeline was deleted live", proposed: []render.Object{web, build}, noLive: true,
			want: without(without(all, stepImage), "x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prop := tc.proposed
			if prop == nil {
				prop = []render.Object{web, build}
			}
			l := map[render.ID]map[string]any{}
			for k, v := range live {
				l[k] = v
			}
			if tc.noLive {
				delete(l, Key(build.ID()))
			}
			writers := append([]string{"backup-operator"}, DefaultOtherWriters...)
			if tc.noWriter {
				writers = DefaultOtherWriters
			}
			c := Compare{Before: []render.Object{web, build}, Proposed: prop, Live: l, AtPause: tc.atPause,
				ControllerManagers: DefaultControllerManagers, OtherWriters: writers,
				Temporary: append(tc.temporary, DefaultTemporary...)}
			changes, err := c.Run()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Class{}
			for _, ch := range changes {
				if _, dup := got[ch.Path]; dup {
					t.Fatalf("path %q listed twice", ch.Path)
				}
				got[ch.Path] = ch.Class
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes:\n%v\nwant:\n%v", got, tc.want)
			}
		})
	}
}

func with(m map[string]Class, k string, c Class) map[string]Class {
	out := without(m, "")
	out[k] = c
	return out
}

func without(m map[string]Class, k string) map[string]Class {
	out := map[string]Class{}
	for p, c := range m {
		if p != k {
			out[p] = c
		}
	}
	return out
}

// TestPatchesEveryEntryKind: the write-back patch of the permanent changes
// of every entry kind: keyed elements with their keys, the set with only
// its desired members and the operator's (not another writer's), the
// index-addressed list whole.
func TestPatchesEveryEntryKind(t *testing.T) {
	t.Parallel()
	web, build := render.Object{Map: fromJSON(t, desiredWeb)}, render.Object{Map: fromJSON(t, desiredPipeline)}
	c := Compare{Before: []render.Object{web, build}, Proposed: []render.Object{web, build},
		Live:               map[render.ID]map[string]any{Key(web.ID()): fromJSON(t, liveWeb), Key(build.ID()): fromJSON(t, livePipeline)},
		ControllerManagers: DefaultControllerManagers, OtherWriters: append([]string{"backup-operator"}, DefaultOtherWriters...)}
	changes, err := c.Run()
	if err != nil {
		t.Fatal(err)
	}
	patches := Patches(changes)
	SetAPIVersion(patches, c.Before)
	got := map[string]string{}
	for _, p := range patches {
		b, err := json.Marshal(p.Map)
		if err != nil {
			t.Fatal(err)
		}
		got[p.ID().Kind] = string(b)
	}
	want := map[string]string{
		"Deployment": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"finalizers":["example.com/keep"],"name":"web"},` +
			`"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":9090,"name":"debug","protocol":"TCP"}],"resources":{"limits":{"memory":"512Mi"}}}]}}}}`,
		"Pipeline": `{"apiVersion":"ci.example.com/v1","kind":"Pipeline","metadata":{"name":"build"},"spec":{"steps":[{"image":"a"},{"image":"c"}]}}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("patches:\n%v\nwant:\n%v", got, want)
	}
}

// TestCompareObjectsOutsideTheRender: tracked live objects absent from the
// render, and rendered objects absent live, are their own classes.
func TestCompareObjectsOutsideTheRender(t *testing.T) {
	t.Parallel()
	web := render.Object{Map: fromJSON(t, desiredWeb)}
	cm := fromJSON(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hotfix","namespace":"prod","resourceVersion":"9",
	  "managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:x":{}}}}]},"data":{"x":"1"}}`)
	cmID := render.ID{Version: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "hotfix"}
	gone := render.ID{Version: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "gone"} // tracked, not live: nothing to say
	c := Compare{Before: []render.Object{web}, Proposed: []render.Object{web}, Live: map[render.ID]map[string]any{Key(cmID): cm},
		Tracked: []render.ID{web.ID(), cmID, cmID, gone}}
	changes, err := c.Run()
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 {
		t.Fatalf("changes %v", changes)
	}
	if ch := changes[0]; ch.Class != LiveOnly || ch.Object != "ConfigMap prod/hotfix" || ch.Manager != "kubectl-create" || !strings.Contains(ch.String(), "not in the desired state") {
		t.Fatalf("live-only: %+v", ch)
	}
	if ch := changes[1]; ch.Class != DeletedLive || ch.Object != webObject || ch.Path != "" {
		t.Fatalf("deleted-live: %+v", ch)
	}
	if p := Patches(changes); len(p) != 0 {
		t.Fatalf("object-level changes are not written back: %v", p)
	}
}

func TestFieldSetRefusesBadEntries(t *testing.T) {
	t.Parallel()
	for name, mf := range map[string]metav1.ManagedFieldsEntry{
		"not FieldsV1": {Manager: "x", FieldsType: "FieldsV2", FieldsV1: metav1.NewFieldsV1(`{}`)},
		"bad Key":      {Manager: "x", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"k:{not json":{}}`)},
		"truncated":    {Manager: "x", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas"`)},
	} {
		if _, err := FieldSet(mf); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
