//go:build e2e

package health

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/testenv"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pushed is a multi-arch index in the real registry.
type pushed struct {
	Repo     string            // host/demo/app
	Index    string            // sha256 of the index
	Children map[string]string // platform -> manifest digest
	Configs  map[string]string // platform -> config digest
}

func (p pushed) Image() string { return p.Repo + ":v1@" + p.Index }

// pushIndex pushes a new multi-arch index to host/repo:v1.
func pushIndex(ctx context.Context, t testing.TB, host, repo string) pushed {
	t.Helper()
	p, idx := buildIndex(t, host, repo)
	idx.Push(ctx, t, p.Repo+":v1")
	return p
}

// buildIndex builds a multi-arch index without pushing it anywhere.
func buildIndex(t testing.TB, host, repo string) (pushed, testenv.Index) {
	t.Helper()
	idx := testenv.MultiArchIndex(t)
	return pushed{Repo: host + "/" + repo, Index: idx.Digest, Children: idx.Manifests, Configs: idx.Configs}, idx
}

// world is one namespace of the API server where the test plays kubelet and
// the workload controllers.
type world struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	ns  string
}

func newWorld(ctx context.Context, t *testing.T, c client.Client, ns string) *world {
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	return &world{t: t, ctx: ctx, c: c, ns: ns}
}

// node creates a Node with the given kubernetes.io/os and arch labels (none
// when os is empty).
func (w *world) node(suffix, os, arch string) string {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: w.ns + "-" + suffix, Labels: map[string]string{}}}
	if os != "" {
		n.Labels[corev1.LabelOSStable], n.Labels[corev1.LabelArchStable] = os, arch
	}
	must(w.t, w.c.Create(w.ctx, n))
	return n.Name
}

type ctr struct {
	name, image string
	init        bool
}

// deployment creates a Deployment and plays the deployment controller:
// a ReplicaSet of its template with pod-template-hash h1, and the
// Deployment's status caught up with replicas updated. A test that rolls out
// creates the next ReplicaSet with replicaSet.
func (w *world) deployment(name string, replicas int32, ctrs ...ctr) (*appsv1.Deployment, *appsv1.ReplicaSet) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}},
		},
	}
	for _, c := range ctrs {
		if c.init {
			d.Spec.Template.Spec.InitContainers = append(d.Spec.Template.Spec.InitContainers, corev1.Container{Name: c.name, Image: c.image})
		} else {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: c.name, Image: c.image})
		}
	}
	must(w.t, w.c.Create(w.ctx, d))
	rs := w.replicaSet(d, "h1")
	w.deploymentStatus(d, replicas)
	return d, rs
}

func (w *world) replicaSet(d *appsv1.Deployment, rev string) *appsv1.ReplicaSet {
	tpl := d.Spec.Template.DeepCopy()
	tpl.Labels[health.LabelPodTemplateHash] = rev
	sel := d.Spec.Selector.DeepCopy()
	sel.MatchLabels[health.LabelPodTemplateHash] = rev
	rs := &appsv1.ReplicaSet{
		// Labels as the deployment controller sets them: the template's.
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: d.Name + "-" + rev, Labels: tpl.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: sel, Template: *tpl},
	}
	must(w.t, w.c.Create(w.ctx, rs))
	return rs
}

func (w *world) deploymentStatus(d *appsv1.Deployment, updated int32) {
	must(w.t, w.c.Get(w.ctx, client.ObjectKeyFromObject(d), d))
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas, d.Status.UpdatedReplicas = *d.Spec.Replicas, updated
	must(w.t, w.c.Status().Update(w.ctx, d))
}

// pod creates a Pod of a ReplicaSet bound to a node (no scheduler runs).
func (w *world) pod(rs *appsv1.ReplicaSet, name, node string) *corev1.Pod {
	return w.podOf(&rs.Spec.Template, nil, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}, name, node)
}

// podOf creates a Pod of a template (plus extra labels) owned by owner.
func (w *world) podOf(tpl *corev1.PodTemplateSpec, extra map[string]string, owner metav1.OwnerReference, name, node string) *corev1.Pod {
	lbl := map[string]string{}
	for k, v := range tpl.Labels {
		lbl[k] = v
	}
	for k, v := range extra {
		lbl[k] = v
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name, Labels: lbl, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       *tpl.Spec.DeepCopy(),
	}
	p.Spec.NodeName = node
	must(w.t, w.c.Create(w.ctx, p))
	return p
}

// kubelet writes the Pod's container statuses through the status
// subresource: name -> imageID ("" = not pulled yet).
func (w *world) kubelet(p *corev1.Pod, restarts int32, imageIDs map[string]string) {
	w.t.Helper()
	must(w.t, w.c.Get(w.ctx, client.ObjectKeyFromObject(p), p))
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses, p.Status.InitContainerStatuses = nil, nil
	for _, c := range p.Spec.InitContainers {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageIDs[c.Name],
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
		})
	}
	for _, c := range p.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: imageIDs[c.Name], RestartCount: restarts}
		if cs.ImageID == "" {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		} else {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
			cs.Ready = true
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
	must(w.t, w.c.Status().Update(w.ctx, p))
}

const renderedHash = "sha256:89abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"

// acceptance creates an Acceptance naming one Deployment and its containers.
func (w *world) acceptance(name, deployment string, ctrs ...ctr) {
	w.acceptanceFor(name, "apps/v1", "Deployment", deployment, ctrs...)
}

// acceptanceFor creates an Acceptance naming one workload of any kind.
func (w *world) acceptanceFor(name, apiVersion, kind, workload string, ctrs ...ctr) {
	var cs []any
	for i, c := range ctrs {
		path := fmt.Sprintf("spec.template.spec.containers[%d].image", i)
		if c.init {
			path = fmt.Sprintf("spec.template.spec.initContainers[%d].image", i)
		}
		digest := ""
		if i := strings.LastIndex(c.image, "@"); i >= 0 {
			digest = c.image[i+1:]
		}
		cs = append(cs, map[string]any{"name": c.name, "path": path, "image": c.image, "digest": digest})
	}
	u := health.NewAcceptance()
	u.SetNamespace(w.ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{
		"app": name, "environment": "staging", "renderedHash": renderedHash, "objectCount": int64(2),
		"workloads": []any{map[string]any{"apiVersion": apiVersion, "kind": kind, "namespace": w.ns, "name": workload, "containers": cs}},
	}
	must(w.t, w.c.Create(w.ctx, u))
}

// ready returns the Acceptance and its Ready condition as the API server
// serves them.
func (w *world) ready(name string) (*unstructured.Unstructured, v1alpha1.AcceptanceStatus, *metav1.Condition) {
	u := health.NewAcceptance()
	must(w.t, w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, u))
	st, err := health.ReadStatus(u)
	must(w.t, err)
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1alpha1.ConditionReady {
			return u, st, &st.Conditions[i]
		}
	}
	return u, st, nil
}

// waitReason waits until the Acceptance's Ready condition has reason (for
// its current generation) and returns the object and status.
func (w *world) waitReason(name, reason string) (*unstructured.Unstructured, v1alpha1.AcceptanceStatus) {
	w.t.Helper()
	return w.waitFor(name, reason, func(v1alpha1.AcceptanceStatus) bool { return true })
}

// waitFor waits until the Ready reason is reason and ok(status) holds.
func (w *world) waitFor(name, reason string, ok func(v1alpha1.AcceptanceStatus) bool) (*unstructured.Unstructured, v1alpha1.AcceptanceStatus) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := "no Ready condition"
	for time.Now().Before(deadline) {
		u, st, c := w.ready(name)
		if c != nil {
			last = fmt.Sprintf("%s %s: %s (observedGeneration %d, generation %d)", c.Status, c.Reason, c.Message, st.ObservedGeneration, u.GetGeneration())
			if c.Reason == reason && st.ObservedGeneration == u.GetGeneration() && ok(st) {
				return u, st
			}
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("Acceptance %s/%s: waiting for %s: %v; last %s", w.ns, name, reason, w.ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
	w.t.Fatalf("Acceptance %s/%s: no Ready reason %s within 60s; last %s", w.ns, name, reason, last)
	return nil, v1alpha1.AcceptanceStatus{}
}

// observed returns the first observed imageID of the first container.
func observed(t *testing.T, st v1alpha1.AcceptanceStatus) v1alpha1.ObservedImage {
	t.Helper()
	if len(st.Workloads) == 0 || len(st.Workloads[0].Containers) == 0 || len(st.Workloads[0].Containers[0].Observed) == 0 {
		t.Fatalf("no observed imageID in status %+v", st)
	}
	return st.Workloads[0].Containers[0].Observed[0]
}

func clientKey(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }

func (w *world) podByName(name string) *corev1.Pod {
	p := &corev1.Pod{}
	must(w.t, w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, p))
	return p
}
