//go:build e2e

package fluxcontrol

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// breakGlass is experiment 5 against the real kustomize-controller, in
// staging (running B): breakglass pause suspends the Kustomization; an
// operator patches the Deployment live (a memory limit); a reconcile
// request does not revert it while suspended; the write-back PR is merged;
// resume lifts the suspension; the Kustomization is Ready at main's tip
// (the write-back merged) with the fix from Git, and applies nothing more
// in a bounded window; the evidence says no flapping.
func (l *lab) breakGlass(t *testing.T) {
	e := stagingEnv
	l.tip()
	bg := func(args ...string) testenv.CLIResult {
		r := l.run(append(append([]string{"breakglass"}, args...), "--repo", l.g.dir, "--app", accName, "--env", e.name,
			"--operator", "alice", "--controller", "flux", "--kubeconfig", l.kc)...)
		if r.Code != 0 {
			t.Fatalf("arrow breakglass %s: exit %d: %s%s", args[0], r.Code, r.Stdout, r.Stderr)
		}
		return r
	}
	bg("pause", "--ticket", "INC-7", "--expires", "4h")
	if s, _, _ := unstructured.NestedBool(l.ks(e).Object, "spec", "suspend"); !s {
		t.Fatal("arrow pause -> Kustomization suspended: spec.suspend is not true")
	}
	applied := nested(l.ks(e), "status", "lastAppliedRevision")

	// The operator's live fix; the real deployment controller rolls it out.
	fix := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "checkout", "namespace": e.ns},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "api", "resources": map[string]any{"limits": map[string]any{"memory": "512Mi"}}}}}}},
	}}
	// kubectl apply --server-side --force-conflicts: the field is kustomize-controller's.
	must(t, l.c.Patch(l.ctx, fix, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership))
	l.roll(e, l.b)
	l.reconcileNow(srcAPI, "GitRepository", "gitops-env")
	l.reconcileNow(ksAPI, "Kustomization", e.ns)
	time.Sleep(3 * time.Second) // a reconcile would have reverted it by now
	if m := l.memory(e); m != "512Mi" {
		t.Fatalf("arrow suspended -> live fix kept: memory limit %q, want 512Mi", m)
	}
	if got := nested(l.ks(e), "status", "lastAppliedRevision"); got != applied {
		t.Fatalf("arrow suspended -> nothing applied: lastAppliedRevision %s -> %s", applied, got)
	}

	wb := bg("writeback", "-o", "json")
	var out struct {
		Branch string `json:"branch"`
		Commit string `json:"commit"`
	}
	must(t, json.Unmarshal([]byte(wb.Stdout), &out))
	l.tip()
	l.g.git("fetch", "-q", "origin", out.Branch)
	l.g.git("merge", "-q", "--no-ff", "-m", "Merge "+out.Branch+": write-back of INC-7", "origin/"+out.Branch)
	// The PR job of the Flux setup: the write-back refreshed the committed Acceptance.
	if r := l.run("render", "--root", l.g.dir, "--check-acceptance", l.g.dir+"/"+e.overlay); r.Code != 0 {
		t.Fatalf("arrow write-back -> PR job: the write-back fails render --check-acceptance (exit %d): %s", r.Code, r.Stderr)
	}
	l.g.git("push", "-q", "origin", "main")
	merge := l.g.git("rev-parse", "HEAD")

	bg("resume", "--observe", "6s")
	if s, _, _ := unstructured.NestedBool(l.ks(e).Object, "spec", "suspend"); s {
		t.Fatal("arrow resume -> Kustomization resumed: still suspended")
	}
	tip := l.tip()
	l.g.git("merge-base", "--is-ancestor", merge, tip)
	t.Logf("write-back %.12s: %s", out.Commit, l.g.git("diff", "--stat", out.Commit+"^", out.Commit))
	// kustomize-controller applies the write-back (the fix's fields change
	// owner: a new generation of the Deployment); the real deployment
	// controller rolls out each new generation, with the played kubelet.
	l.reconcileNow(srcAPI, "GitRepository", "gitops-env")
	eventually(l.ctx, t, time.Minute, "arrow write-back merged -> applied", func() string {
		d := &appsv1.Deployment{}
		must(t, l.c.Get(l.ctx, client.ObjectKey{Namespace: e.ns, Name: "checkout"}, d))
		if r := *d.Spec.Replicas; d.Generation != d.Status.ObservedGeneration || d.Status.UpdatedReplicas != r || d.Status.AvailableReplicas != r {
			t.Logf("the write-back's apply moved the Deployment to generation %d: rolled out", d.Generation)
			l.roll(e, l.b)
		}
		u := l.ks(e)
		if s, _, _ := ready(u); s != "True" || nested(u, "status", "lastAppliedRevision") != fluxRevision(tip) {
			return "Kustomization at " + nested(u, "status", "lastAttemptedRevision") + ", Ready " + s
		}
		return ""
	})
	ks := l.ready(e, tip, "arrow write-back merged -> Kustomization Ready at main's tip")
	if m := l.memory(e); m != "512Mi" {
		t.Fatalf("arrow write-back merged -> live fix from Git: memory limit %q, want 512Mi", m)
	}

	// No flapping: nothing is applied again in a bounded window.
	dep, why := get(l.ctx, l.c, "apps/v1", "Deployment", e.ns, "checkout")
	if why != "" {
		t.Fatal(why)
	}
	time.Sleep(4 * time.Second)
	dep2, _ := get(l.ctx, l.c, "apps/v1", "Deployment", e.ns, "checkout")
	ks2 := l.ks(e)
	if dep2.GetGeneration() != dep.GetGeneration() || nested(ks2, "status", "lastAppliedRevision") != nested(ks, "status", "lastAppliedRevision") {
		t.Fatalf("arrow resumed -> no flapping: Deployment generation %d -> %d, Kustomization %s -> %s", dep.GetGeneration(), dep2.GetGeneration(),
			nested(ks, "status", "lastAppliedRevision"), nested(ks2, "status", "lastAppliedRevision"))
	}
	if s, r, m := ready(ks2); s != "True" {
		t.Fatalf("arrow resumed -> no flapping: Kustomization Ready %s %s: %s", s, r, m)
	}
	rec, err := breakglass.Parse("record", []byte(l.g.git("show", tip+":"+breakglass.Path(e.name, accName))))
	must(t, err)
	file := breakglass.EvidencePath(e.name, accName, rec.PausedAt)
	ev, err := breakglass.ParseEvidence(file, []byte(l.g.git("show", tip+":"+file)))
	must(t, err)
	if rec.State != breakglass.Resumed || !ev.Revocation.NoFlapping || ev.Writeback == nil || ev.Writeback.Commit != out.Commit ||
		ev.Revocation.Restored != "spec.suspend=false" {
		t.Fatalf("arrow resume -> break-glass evidence: record %s, evidence %+v", rec.State, ev.Revocation)
	}
	if !strings.HasPrefix(ev.BeforePause.SourceRevision, "main@sha1:") {
		t.Errorf("arrow pause -> break-glass evidence: source revision %q is not Flux's", ev.BeforePause.SourceRevision)
	}
}

// memory is the live memory limit of e's checkout container "api".
func (l *lab) memory(e envOf) string {
	l.t.Helper()
	dep, why := get(l.ctx, l.c, "apps/v1", "Deployment", e.ns, "checkout")
	if why != "" {
		l.t.Fatal(why)
	}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		m, _ := c.(map[string]any)
		if m["name"] == "api" {
			s, _, _ := unstructured.NestedString(m, "resources", "limits", "memory")
			return s
		}
	}
	return ""
}
