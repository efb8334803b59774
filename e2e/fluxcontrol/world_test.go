//go:build e2e

package fluxcontrol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/testenv"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// namespace creates a namespace and, since no kube-controller-manager runs
// (its serviceaccounts controller makes them), its default ServiceAccount.
func namespace(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"}}))
}

// readYAML reads the objects of a (multi-document) file of the repository.
func readYAML(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	must(t, err)
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// eventually polls check every 250 ms until it returns "" (done), failing the
// test with arrow (the link of the chain that broke) and check's last answer
// after d.
func eventually(ctx context.Context, t *testing.T, d time.Duration, arrow string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for {
		if last = check(); last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", arrow, d, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v; last: %s", arrow, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// get reads an object of the given kind, "" when found, else why not.
func get(ctx context.Context, c client.Client, apiVersion, kind, ns, name string) (*unstructured.Unstructured, string) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("%s %s/%s not found", kind, ns, name)
		}
		return nil, fmt.Sprintf("reading %s %s/%s: %v", kind, ns, name, err)
	}
	return u, ""
}

// ready returns the Ready condition in status.conditions (Flux's and the
// Acceptance's alike).
func ready(u *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// kube plays the parts of Kubernetes that do not run in the harness: the
// deployment controller (kube-controller-manager: ReplicaSet, Pods, the
// Deployment's status) and the kubelet (Pod status with the imageID of every
// container). Nothing else is played: the API server, Flux and the verifier
// are real.
type kube struct {
	t    *testing.T
	ctx  context.Context
	c    client.Client
	node string
}

// rollout plays the deployment controller and the kubelet for the live
// Deployment ns/name: a ReplicaSet of its current template, spec.replicas
// Pods running it with imageID (repo@digest) for every container, and the
// Deployment's status caught up (Available).
func (k *kube) rollout(ns, name, hash, imageID string) {
	k.t.Helper()
	d := &appsv1.Deployment{}
	must(k.t, k.c.Get(k.ctx, client.ObjectKey{Namespace: ns, Name: name}, d))
	tpl := d.Spec.Template.DeepCopy()
	tpl.Labels[health.LabelPodTemplateHash] = hash
	sel := d.Spec.Selector.DeepCopy()
	sel.MatchLabels[health.LabelPodTemplateHash] = hash
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name + "-" + hash, Labels: tpl.Labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: sel, Template: *tpl},
	}
	must(k.t, k.c.Create(k.ctx, rs))
	n := ptr.Deref(d.Spec.Replicas, 1)
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", rs.Name, i), Labels: tpl.Labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: *tpl.Spec.DeepCopy(),
		}
		p.Spec.NodeName = k.node // no scheduler runs either
		must(k.t, k.c.Create(k.ctx, p))
		k.kubelet(p, imageID)
	}
	must(k.t, k.c.Get(k.ctx, client.ObjectKeyFromObject(d), d))
	now := metav1.Now()
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
		},
	}
	must(k.t, k.c.Status().Update(k.ctx, d))
}

// kubelet writes a running Pod's status: every container started from
// imageID, init containers completed.
func (k *kube) kubelet(p *corev1.Pod, imageID string) {
	k.t.Helper()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	for _, c := range p.Spec.InitContainers {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
		})
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		})
	}
	must(k.t, k.c.Status().Update(k.ctx, p))
}

// gitops is the GitOps repository on the harness's Git server and a clone
// of it where the test commits, as CI and reviewers would.
type gitops struct {
	t      *testing.T
	ctx    context.Context
	env    []string
	remote string
	dir    string
}

// newGitOps creates org/gitops-env.git on gs, seeded with examples/gitops-env
// (main), and a working clone.
func newGitOps(ctx context.Context, t *testing.T, gs *testenv.GitServer, root string) *gitops {
	t.Helper()
	remote, err := gs.CreateRepo(ctx, "org/gitops-env.git")
	must(t, err)
	home := t.TempDir()
	g := &gitops{t: t, ctx: ctx, env: testenv.GitEnv(home), remote: remote, dir: filepath.Join(home, "gitops-env")}
	testenv.Git(t, ctx, g.env, home, "clone", "-q", remote, g.dir)
	must(t, os.CopyFS(g.dir, os.DirFS(filepath.Join(root, "examples", "gitops-env"))))
	return g
}

func (g *gitops) git(args ...string) string {
	g.t.Helper()
	return testenv.Git(g.t, g.ctx, g.env, g.dir, args...)
}

// commit commits everything and returns the commit id.
func (g *gitops) commit(msg string) string {
	g.t.Helper()
	g.git("add", "-A")
	g.git("commit", "-q", "-m", msg)
	return g.git("rev-parse", "HEAD")
}

// replace replaces old (exactly once) by repl in a file of the clone.
func (g *gitops) replace(file, old, repl string) {
	g.t.Helper()
	path := filepath.Join(g.dir, file)
	b, err := os.ReadFile(path)
	must(g.t, err)
	if n := strings.Count(string(b), old); n != 1 {
		g.t.Fatalf("%s: %q occurs %d times, want 1", file, old, n)
	}
	must(g.t, os.WriteFile(path, []byte(strings.Replace(string(b), old, repl, 1)), 0o644))
}

// cli runs the throughline CLI in the clone.
func (g *gitops) cli(args ...string) testenv.CLIResult {
	g.t.Helper()
	res, err := testenv.RunCLI(g.ctx, throughline, g.env, append(args[:1:1], append([]string{"--root", g.dir}, args[1:]...)...)...)
	must(g.t, err)
	return res
}

// fluxRevision is the revision string Flux reports for a commit of main.
func fluxRevision(commit string) string { return "main@sha1:" + commit }
