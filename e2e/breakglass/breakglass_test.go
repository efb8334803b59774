//go:build e2e

package breakglass

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/breakglass/live"
	"github.com/throughline-dev/throughline/internal/testenv"
)

var throughlineBin string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughlineBin) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func gitEnv(home string) []string { return testenv.GitEnv(home) }

func git(t *testing.T, ctx context.Context, dir string, args ...string) string {
	t.Helper()
	return testenv.Git(t, ctx, gitEnv(dir), dir, args...)
}

func cli(ctx context.Context, dir, kubeconfig string, args ...string) (testenv.CLIResult, error) {
	return testenv.RunCLI(ctx, throughlineBin, gitEnv(dir), append(args, "--kubeconfig", kubeconfig)...)
}

// world is the API server, the Git remote and a kubeconfig.
type world struct {
	api        *testenv.APIServer
	git        *testenv.GitServer
	remote     string
	kubeconfig string
	commit     string // the seeded commit: the source revision
}

func start(t *testing.T, ctx context.Context) *world {
	t.Helper()
	argo := testenv.ArgoCDCRDs(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{
		filepath.Join(argo, "application-crd.yaml"), testenv.FluxCRDs(t)}})
	srv := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: "s3cr3t"})
	remote, err := srv.CreateRepo(ctx, "platform/gitops.git")
	must(t, err)
	work := t.TempDir()
	for p, c := range map[string]string{
		"apps/web/base/kustomization.yaml":                "resources:\n  - deployment.yaml\n",
		"apps/web/base/deployment.yaml":                   deployment,
		"apps/web/overlays/production/kustomization.yaml": "namespace: web-production\nresources:\n  - ../../base\n",
	} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(work, p), []byte(c), 0o644))
	}
	git(t, ctx, work, "init", "-q", "-b", "main")
	git(t, ctx, work, "add", ".")
	git(t, ctx, work, "commit", "-q", "-m", "web")
	git(t, ctx, work, "push", "-q", remote, "main")
	kc, err := api.Kubeconfig("operator", "")
	must(t, err)
	w := &world{api: api, git: srv, remote: remote, kubeconfig: kc, commit: git(t, ctx, work, "rev-parse", "HEAD")}
	for _, ns := range []string{"argocd", "flux-system", "web-production"} {
		must(t, api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	// The workload, applied by the GitOps controller's field manager.
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web-production"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
	must(t, api.Client.Patch(ctx, dep, client.Apply, client.FieldOwner("argocd-controller"), client.ForceOwnership))
	return w
}

const image = "registry.example.test/web:1.0.0@sha256:4b7e2a91c3d5f6081726354a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"

var deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: ` + image + "\n"

func clone(t *testing.T, ctx context.Context, remote string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	git(t, ctx, filepath.Dir(dir), "clone", "-q", remote, dir)
	return dir
}

// application creates the Argo CD Application web-production with an
// automated sync policy and the status the application-controller writes.
func (w *world) application(t *testing.T, ctx context.Context, mutate func(*unstructured.Unstructured)) {
	t.Helper()
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web-production", "namespace": "argocd"},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": w.remote, "path": "apps/web/overlays/production", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "web-production"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
		},
		"status": map[string]any{
			"sync":      map[string]any{"status": "Synced", "revision": w.commit},
			"resources": []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web-production", "name": "web"}},
		},
	}}
	if mutate != nil {
		mutate(app)
	}
	must(t, w.api.Client.Create(ctx, app))
}

// kustomization creates the Flux Kustomization web-production (without
// spec.suspend); with rev, also the status kustomize-controller writes: rev
// as the applied revision and an inventory of the given entry ids.
func (w *world) kustomization(t *testing.T, ctx context.Context, rev string, inventory ...string) {
	t.Helper()
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "web-production", "namespace": "flux-system"},
		"spec": map[string]any{"interval": "5m", "path": "./apps/web/overlays/production", "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops"}},
	}}
	must(t, w.api.Client.Create(ctx, ks))
	if rev == "" {
		return
	}
	entries := []any{}
	for _, id := range inventory {
		entries = append(entries, map[string]any{"id": id, "v": "v1"})
	}
	ks.Object["status"] = map[string]any{"lastAppliedRevision": "main@sha1:" + rev, "inventory": map[string]any{"entries": entries}}
	must(t, w.api.Client.Status().Update(ctx, ks))
}

// object is an empty object of that type and name, to get or patch.
func object(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// get reads one object by key, named at the call site as with client.Get.
//
//nolint:unparam // every object read so far is named web-production; the key stays whole at the call site
func (w *world) get(t *testing.T, ctx context.Context, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := object(apiVersion, kind, ns, name)
	must(t, w.api.Client.Get(ctx, client.ObjectKeyFromObject(u), u))
	return u
}

// noRecord fails the test when anything is recorded under breakglass/ on
// the remote's main.
func noRecord(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	git(t, ctx, dir, "fetch", "-q", "origin")
	if out := git(t, ctx, dir, "ls-tree", "-r", "--name-only", "origin/main", "breakglass"); out != "" {
		t.Fatalf("recorded on origin/main: %s", out)
	}
}

func readRecord(t *testing.T, ctx context.Context, dir string) *breakglass.Record {
	t.Helper()
	git(t, ctx, dir, "fetch", "-q", "origin")
	data := git(t, ctx, dir, "show", "origin/main:"+breakglass.Path("production", "web"))
	rec, err := breakglass.Parse("record", []byte(data))
	must(t, err)
	return rec
}

// readEvidence reads back the evidence resume committed beside rec.
func readEvidence(t *testing.T, ctx context.Context, dir string, rec *breakglass.Record) *breakglass.Evidence {
	t.Helper()
	file := breakglass.EvidencePath(rec.Environment, rec.App, rec.PausedAt)
	data := git(t, ctx, dir, "show", "origin/main:"+file)
	e, err := breakglass.ParseEvidence(file, []byte(data))
	must(t, err)
	// The record and its evidence are one commit.
	if a, b := git(t, ctx, dir, "log", "-1", "--format=%H", "origin/main", "--", file),
		git(t, ctx, dir, "log", "-1", "--format=%H", "origin/main", "--", breakglass.Path(rec.Environment, rec.App)); a != b {
		t.Fatalf("evidence in %s, resumed record in %s", a, b)
	}
	return e
}

func pauseArgs(dir, operator string, extra ...string) []string {
	return append([]string{"breakglass", "pause", "--repo", dir, "--app", "web", "--env", "production",
		"--ticket", "INC-42", "--expires", "4h", "--operator", operator}, extra...)
}

// TestArgoCDPauseResume: pause removes the automated policy and records the
// live state in Git; a second pause is refused; resume without a merged
// write-back is refused; --force --reason resumes and restores it.
func TestArgoCDPauseResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	w.application(t, ctx, nil)
	dir := clone(t, ctx, w.remote)

	res, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice")...)
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("pause: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	app := w.get(t, ctx, "argoproj.io/v1alpha1", "Application", "argocd", "web-production")
	if _, found, _ := unstructured.NestedFieldNoCopy(app.Object, "spec", "syncPolicy", "automated"); found {
		t.Fatalf("automated still set: %v", app.Object["spec"])
	}
	rec := readRecord(t, ctx, dir)
	if rec.State != breakglass.Paused || rec.Operator != "alice" || rec.Ticket != "INC-42" || rec.SourceRevision != w.commit ||
		rec.Controller != breakglass.ArgoCD || len(rec.Objects) != 1 || rec.Objects[0].ResourceVersion == "" ||
		len(rec.Objects[0].ManagedFields) == 0 || rec.Objects[0].ManagedFields[0].Manager != "argocd-controller" ||
		rec.ExpiresAt.Sub(rec.PausedAt) != 4*time.Hour || !strings.Contains(string(rec.Restore), "selfHeal") {
		t.Fatalf("record %+v", rec)
	}

	// serve's expiry monitor: nothing expired now; 5h later, one Warning
	// Event and the gauge at 1, and no second Event on the next check.
	gauge := live.NewExpiryGauge()
	mon := &live.ExpiryMonitor{Client: w.api.Client, Gauge: gauge}
	if exp, err := mon.Check(ctx); err != nil || len(exp) != 0 {
		t.Fatalf("expired before the expiry: %v %v", exp, err)
	}
	mon.Now = func() time.Time { return time.Now().Add(5 * time.Hour) }
	for range 2 {
		if exp, err := mon.Check(ctx); err != nil || len(exp) != 1 || exp[0] != "Application argocd/web-production" {
			t.Fatalf("expired: %v %v", exp, err)
		}
	}
	if v := testutil.ToFloat64(gauge.WithLabelValues("Application", "argocd", "web-production")); v != 1 {
		t.Fatalf("gauge %v", v)
	}
	var events corev1.EventList
	must(t, w.api.Client.List(ctx, &events, client.InNamespace("argocd")))
	if len(events.Items) != 1 || events.Items[0].Reason != live.ReasonPauseExpired || events.Items[0].Type != corev1.EventTypeWarning ||
		events.Items[0].InvolvedObject.Name != "web-production" || !strings.Contains(events.Items[0].Message, "INC-42") {
		t.Fatalf("events %+v", events.Items)
	}

	again, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "bob")...)
	must(t, err)
	if again.Code != 3 || !strings.Contains(again.Stderr, "already paused by alice") {
		t.Fatalf("second pause: %d %s", again.Code, again.Stderr)
	}

	unmerged, err := cli(ctx, dir, w.kubeconfig, "breakglass", "resume", "--repo", dir, "--app", "web", "--env", "production", "--operator", "alice")
	must(t, err)
	if unmerged.Code != 3 || !strings.Contains(unmerged.Stderr, "no write-back") {
		t.Fatalf("resume without write-back: %d %s", unmerged.Code, unmerged.Stderr)
	}
	forced, err := cli(ctx, dir, w.kubeconfig, "breakglass", "resume", "--repo", dir, "--app", "web", "--env", "production", "--operator", "alice",
		"--force", "--reason", "live patch reverted by hand, nothing to write back", "--observe", "3s")
	must(t, err)
	if forced.Code != 0 {
		t.Fatalf("forced resume: %d %s %s", forced.Code, forced.Stdout, forced.Stderr)
	}
	app = w.get(t, ctx, "argoproj.io/v1alpha1", "Application", "argocd", "web-production")
	if sh, _, _ := unstructured.NestedBool(app.Object, "spec", "syncPolicy", "automated", "selfHeal"); !sh {
		t.Fatalf("automated not restored: %v", app.Object["spec"])
	}
	rec = readRecord(t, ctx, dir)
	if rec.State != breakglass.Resumed || rec.Resume == nil || !rec.Resume.Force || rec.Resume.Reason == "" || rec.Resume.ObservedFor != "3s" || len(rec.Resume.Flapping) != 0 {
		t.Fatalf("resumed record %+v", rec)
	}
	// The evidence of a forced resume: nobody compared the states, no
	// write-back; reconciliation restored at the resource version now live,
	// watched 3s without flapping.
	ev := readEvidence(t, ctx, dir, rec)
	if ev.BeforePause.SourceRevision != w.commit || len(ev.BeforePause.Objects) != 1 || ev.BeforePause.Objects[0].ResourceVersion != rec.Objects[0].ResourceVersion ||
		ev.ManualChange.WritebackRan || ev.Writeback != nil || !ev.Resume.Force || ev.Revocation.Restored != "spec.syncPolicy.automated" ||
		ev.Revocation.ObjectResourceVersion != app.GetResourceVersion() || ev.Revocation.ReconciliationRestoredAt.Before(rec.PausedAt) ||
		!ev.Revocation.NoFlapping || ev.Revocation.ObservedFor != "3s" {
		t.Fatalf("evidence %+v", ev)
	}
}

// TestArgoCDRefusals: an Application owned by an ApplicationSet, and one
// tracked by a parent app, are refused and left as they were.
func TestArgoCDRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	dir := clone(t, ctx, w.remote)
	for _, tc := range []struct {
		name, want string
		mutate     func(*unstructured.Unstructured)
	}{
		{"applicationset", "owned by ApplicationSet", func(u *unstructured.Unstructured) {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "web", UID: "0b3e0f4e-0000-4000-8000-000000000001"}})
		}},
		{"parent", "parent Application \"platform\"", func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{breakglass.ArgoInstanceLabel: "platform"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.application(t, ctx, tc.mutate)
			defer func() {
				must(t, w.api.Client.Delete(ctx, w.get(t, ctx, "argoproj.io/v1alpha1", "Application", "argocd", "web-production")))
			}()
			res, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice")...)
			must(t, err)
			if res.Code != 3 || !strings.Contains(res.Stderr, tc.want) {
				t.Fatalf("want refusal %q: %d %s", tc.want, res.Code, res.Stderr)
			}
			app := w.get(t, ctx, "argoproj.io/v1alpha1", "Application", "argocd", "web-production")
			if _, found, _ := unstructured.NestedFieldNoCopy(app.Object, "spec", "syncPolicy", "automated"); !found {
				t.Fatal("a refused pause changed the Application")
			}
			noRecord(t, ctx, dir)
		})
	}
}

// TestConcurrentPause: two operators pause the same app at once from two
// clones: exactly one wins, the record names the winner.
func TestConcurrentPause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	w.application(t, ctx, nil)
	ops := []string{"alice", "bob"}
	dirs := []string{clone(t, ctx, w.remote), clone(t, ctx, w.remote)}
	results := make([]testenv.CLIResult, len(ops))
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = cli(ctx, dirs[i], w.kubeconfig, pauseArgs(dirs[i], ops[i])...)
		}()
	}
	wg.Wait()
	winner := ""
	for i, r := range results {
		must(t, errs[i])
		switch r.Code {
		case 0:
			if winner != "" {
				t.Fatalf("two operators won: %s and %s", winner, ops[i])
			}
			winner = ops[i]
		case 3:
		default:
			t.Fatalf("%s: exit %d %s", ops[i], r.Code, r.Stderr)
		}
	}
	if winner == "" {
		t.Fatalf("nobody won: %+v", results)
	}
	if rec := readRecord(t, ctx, dirs[0]); rec.Operator != winner || rec.State != breakglass.Paused {
		t.Fatalf("record names %s, winner %s", rec.Operator, winner)
	}
}

// TestFluxPause: spec.suspend on the Kustomization, the inventory's live
// objects recorded; a Kustomization applied by a parent is refused.
func TestFluxPause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	w.kustomization(t, ctx, w.commit, "web-production_web_apps_Deployment")
	dir := clone(t, ctx, w.remote)
	res, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice", "--controller", "flux")...)
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("pause: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	got := w.get(t, ctx, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "web-production")
	if s, _, _ := unstructured.NestedBool(got.Object, "spec", "suspend"); !s {
		t.Fatal("not suspended")
	}
	rec := readRecord(t, ctx, dir)
	if rec.Controller != breakglass.Flux || rec.SourceRevision != "main@sha1:"+w.commit || len(rec.Objects) != 1 || rec.Objects[0].Kind != "Deployment" || rec.Objects[0].ResourceVersion == "" {
		t.Fatalf("record %+v", rec)
	}
	forced, err := cli(ctx, dir, w.kubeconfig, "breakglass", "resume", "--repo", dir, "--app", "web", "--env", "production", "--operator", "alice",
		"--controller", "flux", "--force", "--reason", "test", "--observe", "0")
	must(t, err)
	if forced.Code != 0 {
		t.Fatalf("resume: %d %s", forced.Code, forced.Stderr)
	}
	got = w.get(t, ctx, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "web-production")
	if s, _, _ := unstructured.NestedBool(got.Object, "spec", "suspend"); s {
		t.Fatal("still suspended after resume")
	}
	// Not watched (--observe 0): the evidence does not claim "no flapping".
	rec = readRecord(t, ctx, dir)
	if ev := readEvidence(t, ctx, dir, rec); ev.Controller != breakglass.Flux || ev.Revocation.Restored != "spec.suspend=false" ||
		ev.Revocation.ObjectResourceVersion != got.GetResourceVersion() || ev.Revocation.NoFlapping || ev.Revocation.ObservedFor != "0s" ||
		ev.BeforePause.SourceRevision != "main@sha1:"+w.commit {
		t.Fatalf("evidence %+v", ev)
	}
}

// TestArgoCDWriteback: during the pause an operator patches the Deployment
// live (server-side apply as field manager "kubectl": a memory limit, and a
// restart annotation) while the HPA's manager scales it. writeback proposes
// only the memory limit as a patch in the overlay on a branch, lists the
// restart as temporary and the replicas as another writer's; resume is
// refused until the branch is merged, then re-enables automated sync.
func TestArgoCDWriteback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	w.application(t, ctx, nil)
	dir := clone(t, ctx, w.remote)
	res, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice")...)
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("pause: %d %s", res.Code, res.Stderr)
	}

	// The operator's live fix and the HPA, each with its own field manager.
	// The fix touches every managedFields entry kind the API server writes
	// for a Deployment: fields (f:), containers by name and ports by
	// containerPort+protocol (k:), finalizers by value (v:).
	fix := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "web-production", "finalizers": []any{"example.com/keep"}},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"kubectl.kubernetes.io/restartedAt": "2026-11-29T12:00:00Z"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "web",
				"ports":     []any{map[string]any{"containerPort": int64(9090), "protocol": "TCP", "name": "debug"}},
				"resources": map[string]any{"limits": map[string]any{"memory": "512Mi"}}}}}}},
	}}
	must(t, w.api.Client.Patch(ctx, fix, client.Apply, client.FieldOwner("kubectl")))
	// Another writer's finalizer (an operator present on the object).
	must(t, w.api.Client.Patch(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "web-production", "finalizers": []any{"backup.example.com/protect"}},
	}}, client.Apply, client.FieldOwner("backup-operator")))
	defer func() { // let the namespace go at the end
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web-production"}}
		_ = w.api.Client.Patch(context.WithoutCancel(ctx), dep, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	}()
	hpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "web-production"},
		"spec":     map[string]any{"replicas": int64(5)},
	}}
	must(t, w.api.Client.Patch(ctx, hpa, client.Apply, client.FieldOwner("kube-controller-manager"), client.ForceOwnership))

	wb, err := cli(ctx, dir, w.kubeconfig, "breakglass", "writeback", "--repo", dir, "--app", "web", "--env", "production", "--operator", "alice",
		"--writer", "backup-operator", "-o", "json")
	must(t, err)
	if wb.Code != 0 {
		t.Fatalf("writeback: %d %s %s", wb.Code, wb.Stdout, wb.Stderr)
	}
	var out struct {
		Changes []breakglass.Change `json:"changes"`
		Branch  string              `json:"branch"`
		Commit  string              `json:"commit"`
	}
	must(t, json.Unmarshal([]byte(wb.Stdout), &out))
	classes := map[string]breakglass.Class{}
	for _, c := range out.Changes {
		classes[c.Path] = c.Class
	}
	port := `spec.template.spec.containers[{"name":"web"}].ports[{"containerPort":9090,"protocol":"TCP"}]`
	want := map[string]breakglass.Class{
		`spec.template.spec.containers[{"name":"web"}].resources.limits.memory`: breakglass.Permanent,
		port + ".containerPort":                              breakglass.Permanent,
		port + ".name":                                       breakglass.Permanent,
		port + ".protocol":                                   breakglass.Permanent,
		`metadata.finalizers[="example.com/keep"]`:           breakglass.Permanent,
		`metadata.finalizers[="backup.example.com/protect"]`: breakglass.OtherWriter,
		"spec.template.metadata.annotations.kubectl.kubernetes.io/restartedAt": breakglass.Temporary,
		"spec.replicas": breakglass.OtherWriter,
	}
	if !reflect.DeepEqual(classes, want) {
		t.Fatalf("changes %v\nwant %v\n%s", classes, want, wb.Stdout)
	}
	if out.Branch != "throughline/breakglass/web/production/inc-42" {
		t.Fatalf("branch %q", out.Branch)
	}
	git(t, ctx, dir, "fetch", "-q", "origin")
	patch := git(t, ctx, dir, "show", "origin/"+out.Branch+":apps/web/overlays/production/breakglass-deployment-web.yaml")
	if !strings.Contains(patch, "memory: 512Mi") || !strings.Contains(patch, "containerPort: 9090") || !strings.Contains(patch, "example.com/keep") ||
		strings.Contains(patch, "replicas") || strings.Contains(patch, "restartedAt") || strings.Contains(patch, "backup.example.com") {
		t.Fatalf("patch:\n%s", patch)
	}
	if k := git(t, ctx, dir, "show", "origin/"+out.Branch+":apps/web/overlays/production/kustomization.yaml"); !strings.Contains(k, "path: breakglass-deployment-web.yaml") {
		t.Fatalf("kustomization:\n%s", k)
	}
	if rec := readRecord(t, ctx, dir); rec.Writeback == nil || rec.Writeback.Commit != out.Commit {
		t.Fatalf("record write-back %+v", rec.Writeback)
	}

	unmerged, err := cli(ctx, dir, w.kubeconfig, "breakglass", "resume", "--repo", dir, "--app", "web", "--env", "production", "--operator", "alice")
	must(t, err)
	if unmerged.Code != 3 || !strings.Contains(unmerged.Stderr, "not merged") {
		t.Fatalf("resume before merge: %d %s", unmerged.Code, unmerged.Stderr)
	}
	// The PR is merged.
	git(t, ctx, dir, "merge", "-q", "--ff-only", "origin/main")
	git(t, ctx, dir, "merge", "-q", "--no-ff", "-m", "merge write-back", "origin/"+out.Branch)
	git(t, ctx, dir, "push", "-q", "origin", "main")
	// While resume watches, two writers fight over spec.replicas: the
	// resume is recorded with the object as flapping, and exits 3.
	fight, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var fightErr error
	go func() {
		defer close(done)
		for i := 0; fight.Err() == nil; i++ {
			mgr, n := "argocd-controller", int64(2)
			if i%2 == 0 {
				mgr, n = "kube-controller-manager", 7
			}
			dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web-production"}}
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)))
			if err := w.api.Client.Patch(fight, dep, patch, client.FieldOwner(mgr)); err != nil && fight.Err() == nil {
				fightErr = err
			}
			time.Sleep(700 * time.Millisecond)
		}
	}()
	ok, err := cli(ctx, dir, w.kubeconfig, "breakglass", "resume", "--repo", dir, "--app", "web", "--env", "production", "--operator", "alice", "--observe", "6s")
	stop()
	<-done
	must(t, err)
	must(t, fightErr)
	if ok.Code != 3 || !strings.Contains(ok.Stderr, "written back and forth") || !strings.Contains(ok.Stderr, "Deployment web-production/web") {
		t.Fatalf("resume after merge with a fight: %d %s %s", ok.Code, ok.Stdout, ok.Stderr)
	}
	rec := readRecord(t, ctx, dir)
	if rec.State != breakglass.Resumed || rec.Resume.Force || rec.Resume.WritebackMerged == "" || len(rec.Resume.Flapping) != 1 {
		t.Fatalf("record %+v", rec.Resume)
	}
	// The five pieces of evidence, read back from Git.
	ev := readEvidence(t, ctx, dir, rec)
	evClasses := map[string]breakglass.Class{}
	for _, c := range ev.ManualChange.Changes {
		evClasses[c.Path] = c.Class
	}
	if ev.BeforePause.SourceRevision != w.commit || ev.BeforePause.Objects[0].ResourceVersion == "" ||
		!reflect.DeepEqual(evClasses, want) || ev.Writeback == nil || ev.Writeback.Commit != out.Commit ||
		ev.Writeback.MergedInto != rec.Resume.WritebackMerged || ev.Resume.Force || ev.Resume.By != "alice" ||
		ev.Revocation.Restored != "spec.syncPolicy.automated" || ev.Revocation.ReconciliationRestoredAt.IsZero() ||
		ev.Revocation.NoFlapping || len(ev.Revocation.Flapping) != 1 || ev.Revocation.ObservedFor != "6s" {
		t.Fatalf("evidence %+v", ev)
	}
	git(t, ctx, dir, "merge-base", "--is-ancestor", ev.Writeback.Commit, ev.Writeback.MergedInto) // fails the test when not
	app := w.get(t, ctx, "argoproj.io/v1alpha1", "Application", "argocd", "web-production")
	if _, found, _ := unstructured.NestedFieldNoCopy(app.Object, "spec", "syncPolicy", "automated"); !found {
		t.Fatal("automated not restored")
	}
}

// TestWritebackWithoutPause: refused.
func TestWritebackWithoutPause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	dir := clone(t, ctx, w.remote)
	res, err := cli(ctx, dir, w.kubeconfig, "breakglass", "writeback", "--repo", dir, "--app", "web", "--env", "production", "--operator", "alice")
	must(t, err)
	if res.Code != 3 || !strings.Contains(res.Stderr, "no active pause record") {
		t.Fatalf("want refusal: %d %s", res.Code, res.Stderr)
	}
}

// TestFluxWritebackObjectsOutsideTheRender: during the pause an operator
// creates a ConfigMap by hand (the Kustomization's inventory lists it, as
// after a one-off apply) and deletes the rendered Service. writeback lists
// both as their own classes (live-only, deleted-live), writes neither back,
// and records them in the pause record.
func TestFluxWritebackObjectsOutsideTheRender(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	// The base also renders a Service, which was never created live here
	// (the operator deleted it during the incident).
	seed := clone(t, ctx, w.remote)
	must(t, os.WriteFile(filepath.Join(seed, "apps/web/base/service.yaml"), []byte(service), 0o644))
	must(t, os.WriteFile(filepath.Join(seed, "apps/web/base/kustomization.yaml"), []byte("resources:\n  - deployment.yaml\n  - service.yaml\n"), 0o644))
	git(t, ctx, seed, "add", ".")
	git(t, ctx, seed, "commit", "-q", "-m", "web: service")
	git(t, ctx, seed, "push", "-q", "origin", "main")
	rev := git(t, ctx, seed, "rev-parse", "HEAD")

	w.kustomization(t, ctx, rev, "web-production_web_apps_Deployment", "web-production_web__Service")
	dir := clone(t, ctx, w.remote)
	res, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice", "--controller", "flux")...)
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("pause: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	// The hand-made ConfigMap, which a one-off apply put in the inventory.
	hotfix := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web-hotfix", "namespace": "web-production"},
		"data":     map[string]any{"FEATURE_X": "off"},
	}}
	must(t, w.api.Client.Patch(ctx, hotfix, client.Apply, client.FieldOwner("kubectl")))
	got := w.get(t, ctx, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "web-production")
	entries, _, _ := unstructured.NestedSlice(got.Object, "status", "inventory", "entries")
	got.Object["status"].(map[string]any)["inventory"] = map[string]any{"entries": append(entries,
		map[string]any{"id": "web-production_web-hotfix__ConfigMap", "v": "v1"})}
	must(t, w.api.Client.Status().Update(ctx, got))

	wb, err := cli(ctx, dir, w.kubeconfig, "breakglass", "writeback", "--repo", dir, "--app", "web", "--env", "production",
		"--operator", "alice", "--controller", "flux", "-o", "json")
	must(t, err)
	if wb.Code != 0 {
		t.Fatalf("writeback: %d %s %s", wb.Code, wb.Stdout, wb.Stderr)
	}
	var out struct {
		Changes []breakglass.Change `json:"changes"`
		Branch  string              `json:"branch"`
	}
	must(t, json.Unmarshal([]byte(wb.Stdout), &out))
	classes := map[string]breakglass.Class{}
	for _, c := range out.Changes {
		classes[c.Object+" "+c.Path] = c.Class
	}
	want := map[string]breakglass.Class{
		"ConfigMap web-production/web-hotfix ": breakglass.LiveOnly,
		"Service web-production/web ":          breakglass.DeletedLive,
	}
	if !reflect.DeepEqual(classes, want) {
		t.Fatalf("changes %v\nwant %v\n%s", classes, want, wb.Stdout)
	}
	for _, c := range out.Changes {
		if c.Class == breakglass.LiveOnly && c.Manager != "kubectl" {
			t.Fatalf("live-only creator %q, want kubectl", c.Manager)
		}
	}
	if out.Branch != "" {
		t.Fatalf("objects outside the render were written back on %s", out.Branch)
	}
	rec := readRecord(t, ctx, dir)
	if rec.Writeback == nil || len(rec.Writeback.Changes) != 2 || !strings.Contains(strings.Join(rec.Writeback.Changes, "\n"), "live-only") ||
		!strings.Contains(strings.Join(rec.Writeback.Changes, "\n"), "deleted-live") {
		t.Fatalf("record write-back %+v", rec.Writeback)
	}
}

const service = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 8080
`

// TestPauseUndoneWhenRecordPushFails: the Git server refuses the push of the
// pause record (a pre-receive hook on the bare repository, as a branch
// protection would). The pause is undone in the cluster: the Application's
// spec.syncPolicy.automated / the Kustomization's spec.suspend is back as it
// was, without the break-glass annotations; the command exits non-zero and
// says what happened; nothing is recorded.
func TestPauseUndoneWhenRecordPushFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	hook := filepath.Join(w.git.Root, "platform/gitops.git", "hooks", "pre-receive")
	must(t, os.MkdirAll(filepath.Dir(hook), 0o755))
	must(t, os.WriteFile(hook, []byte("#!/bin/sh\necho 'change freeze: pushes to this repository are refused' >&2\nexit 1\n"), 0o755))
	w.application(t, ctx, nil)
	w.kustomization(t, ctx, "") // no spec.suspend, no status
	dir := clone(t, ctx, w.remote)
	for _, tc := range []struct {
		controller, apiVersion, kind, ns string
		field                            []string
	}{
		{"argocd", "argoproj.io/v1alpha1", "Application", "argocd", []string{"spec", "syncPolicy"}},
		{"flux", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", []string{"spec", "suspend"}},
	} {
		t.Run(tc.controller, func(t *testing.T) {
			before := w.get(t, ctx, tc.apiVersion, tc.kind, tc.ns, "web-production")
			want, wantFound, _ := unstructured.NestedFieldCopy(before.Object, tc.field...)
			res, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice", "--controller", tc.controller)...)
			must(t, err)
			if res.Code == 0 || !strings.Contains(res.Stderr, "recording the pause in breakglass/production/web.yaml failed, so the pause was undone") ||
				!strings.Contains(res.Stderr, "the remote declined it: change freeze: pushes to this repository are refused") {
				t.Fatalf("pause with a refused push: %d %s %s", res.Code, res.Stdout, res.Stderr)
			}
			after := w.get(t, ctx, tc.apiVersion, tc.kind, tc.ns, "web-production")
			got, found, _ := unstructured.NestedFieldCopy(after.Object, tc.field...)
			if found != wantFound || !reflect.DeepEqual(got, want) {
				t.Fatalf("%v after the undo: %v (set: %t), want %v (set: %t)", tc.field, got, found, want, wantFound)
			}
			for _, a := range []string{breakglass.AnnotationTicket, breakglass.AnnotationExpiresAt} {
				if v, ok := after.GetAnnotations()[a]; ok {
					t.Fatalf("annotation %s=%s left behind", a, v)
				}
			}
			if after.GetResourceVersion() == before.GetResourceVersion() {
				t.Fatal("the object was never paused: the test proves nothing")
			}
			noRecord(t, ctx, dir)
		})
	}
}

// TestArgoCDPauseUnderApplicationSetController: Argo CD's own ApplicationSet
// controller (v2.14, List generator) creates the Application with an
// automated sync policy. pause refuses it with guidance and changes nothing;
// and the reason is real: when an operator removes
// spec.syncPolicy.automated by hand, the controller puts it back.
func TestArgoCDPauseUnderApplicationSetController(t *testing.T) {
	testenv.RequireArgoCDApplicationSetController(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := start(t, ctx)
	ctl := testenv.StartArgoCDApplicationSetController(t, w.api)
	must(t, w.api.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": "argocd"},
		"spec": map[string]any{"sourceRepos": []any{"*"},
			"destinations": []any{map[string]any{"server": "*", "namespace": "*"}}},
	}}))
	must(t, w.api.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"name": "web", "namespace": "argocd"},
		"spec": map[string]any{
			"generators": []any{map[string]any{"list": map[string]any{"elements": []any{map[string]any{"env": "production"}}}}},
			"template": map[string]any{
				"metadata": map[string]any{"name": "web-{{env}}"},
				"spec": map[string]any{
					"project":     "default",
					"source":      map[string]any{"repoURL": w.remote, "path": "apps/web/overlays/{{env}}", "targetRevision": "main"},
					"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "web-{{env}}"},
					"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
				},
			},
		},
	}}))
	automated := func() (*unstructured.Unstructured, bool) {
		app := object("argoproj.io/v1alpha1", "Application", "argocd", "web-production")
		if err := w.api.Client.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
			return nil, false
		}
		a, found, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "automated")
		return app, found && a["selfHeal"] == true
	}
	waitAutomated := func(what string) *unstructured.Unstructured {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if app, ok := automated(); ok {
				return app
			}
			if time.Now().After(deadline) {
				app, _ := automated()
				t.Fatalf("%s: no Application web-production with spec.syncPolicy.automated after 60s: %v", what, app)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	t0 := time.Now()
	app := waitAutomated("the controller creates the Application")
	owners := app.GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != "ApplicationSet" || owners[0].Name != "web" {
		t.Fatalf("owners %+v", owners)
	}
	t.Logf("ApplicationSet controller created the Application in %s", time.Since(t0).Round(time.Millisecond))

	dir := clone(t, ctx, w.remote)
	res, err := cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice")...)
	must(t, err)
	if res.Code != 3 || !strings.Contains(res.Stderr, "owned by ApplicationSet web") || !strings.Contains(res.Stderr, "ignoreApplicationDifferences") {
		t.Fatalf("pause under an ApplicationSet: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	if after, ok := automated(); !ok || after.GetResourceVersion() != app.GetResourceVersion() {
		t.Fatal("a refused pause changed the Application")
	}
	noRecord(t, ctx, dir)

	// Why: the pause by hand is undone by the controller.
	manual := object("argoproj.io/v1alpha1", "Application", "argocd", "web-production")
	must(t, w.api.Client.Patch(ctx, manual, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"syncPolicy":{"automated":null}}}`)), client.FieldOwner("kubectl-edit")))
	if _, ok := automated(); ok {
		t.Fatal("the manual removal did not take")
	}
	t1 := time.Now()
	restored := waitAutomated("the controller restores spec.syncPolicy.automated")
	t.Logf("ApplicationSet controller restored spec.syncPolicy.automated %s after the manual removal", time.Since(t1).Round(time.Millisecond))
	writers := []string{}
	for _, mf := range restored.GetManagedFields() {
		writers = append(writers, mf.Manager+"/"+string(mf.Operation))
	}
	t.Logf("managers of the restored Application: %v", writers)

	// Half the guidance: the ApplicationSet ignores the app's
	// spec.syncPolicy but would still strip the break-glass annotations
	// (the expiry monitor reads them): refused, saying what is missing.
	as := object("argoproj.io/v1alpha1", "ApplicationSet", "argocd", "web")
	must(t, w.api.Client.Patch(ctx, as, client.RawPatch(types.MergePatchType, []byte(`{"spec":{
		"ignoreApplicationDifferences":[{"name":"web-production","jsonPointers":["/spec/syncPolicy"]}]}}`))))
	res, err = cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice")...)
	must(t, err)
	if res.Code != 3 || !strings.Contains(res.Stderr, "ignores /spec/syncPolicy: true; preserves "+breakglass.AnnotationTicket+": false") {
		t.Fatalf("pause with spec.syncPolicy ignored but the annotations not preserved: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	noRecord(t, ctx, dir)

	// Following the guidance: the ApplicationSet ignores the app's
	// spec.syncPolicy and preserves the break-glass annotations. Now pause
	// succeeds, and the controller, reconciling after the pause, leaves it.
	must(t, w.api.Client.Patch(ctx, as, client.RawPatch(types.MergePatchType, []byte(`{"spec":{
		"ignoreApplicationDifferences":[{"name":"web-production","jsonPointers":["/spec/syncPolicy"]}],
		"preservedFields":{"annotations":["`+breakglass.AnnotationTicket+`","`+breakglass.AnnotationExpiresAt+`"]}}}`))))
	before := reconciles(t, ctx, ctl)
	res, err = cli(ctx, dir, w.kubeconfig, pauseArgs(dir, "alice")...)
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("pause with the guidance followed: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	deadline := time.Now().Add(30 * time.Second)
	for reconciles(t, ctx, ctl) < before+2 { // the patch of the ApplicationSet, then the pause
		if time.Now().After(deadline) {
			t.Fatalf("the controller did not reconcile after the pause (%v reconciles before)", before)
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(time.Second)
	paused, ok := automated()
	if ok || paused.GetAnnotations()[breakglass.AnnotationTicket] != "INC-42" {
		t.Fatalf("the controller undid the pause: %v %v", paused.Object["spec"], paused.GetAnnotations())
	}
}

// reconciles reads the ApplicationSet controller's reconcile count of the
// ApplicationSet web from its metrics.
func reconciles(t *testing.T, ctx context.Context, ctl *testenv.ArgoCDApplicationSetController) float64 {
	t.Helper()
	n, err := ctl.Metric(ctx, `argocd_appset_reconcile_count{name="web",namespace="argocd"}`)
	must(t, err)
	return n
}
