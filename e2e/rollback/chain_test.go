//go:build e2e

package rollback

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
)

const (
	chainNS  = "web-production"
	fluxNS   = "flux-system"
	ksName   = "web-production"
	nodeName = "node-amd64"
)

// chain is one production environment: the GitOps repository on the
// harness's Git server, a kube-apiserver where the test plays Flux's
// kustomize-controller, the deployment controller and kubelet, the real
// Acceptance controller (as throughline serve runs it), Flux's real
// notification-controller and the notifier committing evidence to main.
type chain struct {
	t        *testing.T
	ctx      context.Context
	api      *testenv.APIServer
	remote   string
	imageRep string
	events   string // notification-controller's events endpoint
	ks       *unstructured.Unstructured
	rollout  int
	// key signs the evidence the notifier writes; the policy's
	// evidenceSigners lists it for production.
	key sshkey.Notifier
}

// TestRollbackEvidenceChain: production accepts A, then B, each through
// the real notifier; throughline rollback --to previous proposes A as a new
// attempt, born VERIFIED by production's own acceptance of A; it is
// approved, passes promote check, is merged (fast-forward), reconciled, and
// the real controller event leads the notifier to evidence ACCEPTED for the
// rollback attempt: desired commit pins A, the observed revision is main's
// tip (the reconcile commit, later than the desired one, rendering the same
// objects), the new Pods run A.
func TestRollbackEvidenceChain(t *testing.T) {
	testenv.RequireNotificationController(t)
	root := testenv.RepoRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	isolated = []string{"DOCKER_CONFIG=" + t.TempDir(), "THROUGHLINE_CACHE_DIR=" + t.TempDir()}
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{testenv.FluxCRDs(t), filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")}})
	nc := testenv.StartNotificationController(t, api)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: "s3cr3t"})
	remoteURL, err := gs.CreateRepo(ctx, "platform/gitops.git")
	must(t, err)
	c := &chain{t: t, ctx: ctx, api: api, remote: remoteURL, imageRep: reg.Host + "/web", events: nc.EventsURL}
	a := push(t, ctx, c.imageRep+":1.0.0")
	b := push(t, ctx, c.imageRep+":1.1.0")

	// The repository: the web app, production pinned to A, desired by
	// record web-production-A-1 (RECONCILING).
	ci := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(ci, "apps/web/base"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ci, overlay), 0o755))
	must(t, os.WriteFile(filepath.Join(ci, "apps/web/base/kustomization.yaml"), []byte("resources:\n  - deployment.yaml\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ci, "apps/web/base/deployment.yaml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: "+c.imageRep+":1.0.0\n"), 0o644))
	c.key = sshkey.NewNotifier(t, "production")
	writePolicy(t, ci, c.key)
	git(t, ctx, ci, "init", "-q", "-b", "main")
	git(t, ctx, ci, "remote", "add", "origin", remoteURL)
	recA := c.desire(ci, "1.0.0", a, 1)

	// The cluster side.
	testenv.StartVerifier(c.ctx, c.t, c.api.Config)
	c.startNotifier(root)
	cl := api.Client
	must(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chainNS}}))
	must(t, cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}))

	evA, _ := c.deliver(recA.Reconciling.DesiredRevision, a, recA.PromotionID)
	t.Logf("A accepted: %s", evA.PromotionID)
	git(t, ctx, ci, "pull", "-q", "--ff-only", "origin", "main")
	recB := c.desire(ci, "1.1.0", b, 1)
	evB, _ := c.deliver(recB.Reconciling.DesiredRevision, b, recB.PromotionID)
	t.Logf("B accepted: %s", evB.PromotionID)

	// Roll back: a new attempt of A, on a branch, VERIFIED by A-1.
	dir := clone(t, ctx, remoteURL)
	mainBefore := git(t, ctx, dir, "rev-parse", "origin/main")
	res, err := cli(ctx, dir, "rollback", "--repo", dir, "--app", "web", "--env", "production", "--to", "previous", "-o", "json")
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("rollback: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	var rb struct {
		Proposal struct {
			Record *promotion.Record `json:"record"`
			Branch string            `json:"branch"`
			Commit string            `json:"commit"`
		} `json:"proposal"`
		From     string `json:"from"`
		Unproven []any  `json:"unproven"`
	}
	must(t, json.Unmarshal([]byte(res.Stdout), &rb))
	rec := rb.Proposal.Record
	wantID := promotion.AttemptKey{App: "web", Digest: a, Environment: "production", Attempt: 2}.ID()
	if rec.PromotionID != wantID || rec.State != promotion.Verified || rb.From != b || len(rb.Unproven) != 0 {
		t.Fatalf("rollback proposed %s (%s) from %s, unproven %v; want %s VERIFIED from %s", rec.PromotionID, rec.State, rb.From, rb.Unproven, wantID, b)
	}
	// The claim names the notifier's own commit of A's evidence.
	p := rec.VerifiedIn.PriorAcceptance
	if !rec.VerifiedIn.IsPriorAcceptance() || p.PromotionID != recA.PromotionID || p.Evidence != evidence.Path("production", "web", recA.PromotionID) {
		t.Fatalf("verifiedIn %+v %+v", rec.VerifiedIn, p)
	}
	git(t, ctx, dir, "fetch", "-q", "origin")
	if got := git(t, ctx, dir, "show", p.Commit+":"+p.Evidence); !strings.Contains(got, `"decision": "ACCEPTED"`) || !strings.Contains(got, a) {
		t.Fatalf("evidence at the claimed commit:\n%s", got)
	}
	if got := git(t, ctx, dir, "rev-parse", "origin/main"); got != mainBefore {
		t.Fatalf("rollback moved main: %s, was %s", got, mainBefore)
	}

	// The rollback refreshed the committed Acceptance in its commit.
	rbTree := clone(t, ctx, remoteURL)
	git(t, ctx, rbTree, "checkout", "-q", "origin/"+rb.Proposal.Branch)
	if res, err := cli(ctx, rbTree, "render", "--check-acceptance", "--root", rbTree, filepath.Join(rbTree, overlay)); err != nil || res.Code != 0 {
		t.Fatalf("render --check-acceptance at the rollback branch: %v %+v", err, res)
	}
	// The PR job before approval: only the approval is missing.
	pr := clone(t, ctx, remoteURL)
	chk, err := cli(ctx, pr, "promote", "check", "--repo", pr, "--base", "origin/main", "--head", "origin/"+rb.Proposal.Branch)
	must(t, err)
	if chk.Code != 3 || !strings.Contains(chk.Stdout, "not approved") || strings.Count(chk.Stdout, "REFUSED") != 1 {
		t.Fatalf("check before approval: %d\n%s\n%s", chk.Code, chk.Stdout, chk.Stderr)
	}
	ap, err := cli(ctx, dir, "promote", "approve", "--repo", dir, "--app", "web", "--to", "production", "--branch", rb.Proposal.Branch, "--approver", "alice", "--expires", "1h")
	must(t, err)
	if ap.Code != 0 {
		t.Fatalf("approve: %d %s %s", ap.Code, ap.Stdout, ap.Stderr)
	}
	git(t, ctx, pr, "fetch", "-q", "origin")
	chk, err = cli(ctx, pr, "promote", "check", "--repo", pr, "--base", "origin/main", "--head", "origin/"+rb.Proposal.Branch)
	must(t, err)
	if chk.Code != 0 || !strings.Contains(chk.Stdout, "OK:") {
		t.Fatalf("check after approval: %d\n%s\n%s", chk.Code, chk.Stdout, chk.Stderr)
	}

	// Merge: fast-forward main to the branch on the server.
	head := git(t, ctx, pr, "rev-parse", "origin/"+rb.Proposal.Branch)
	git(t, ctx, pr, "merge-base", "--is-ancestor", "origin/main", head)
	git(t, ctx, pr, "push", "-q", "origin", head+":refs/heads/main")
	desired := head
	if k := git(t, ctx, pr, "show", desired+":"+overlay+"/kustomization.yaml"); !strings.Contains(k, "1.0.0@"+a) || strings.Contains(k, b) {
		t.Fatalf("the desired commit %s does not pin A:\n%s", desired, k)
	}

	// The post-merge job.
	post := clone(t, ctx, remoteURL)
	rc, err := cli(ctx, post, "promote", "reconcile", "--repo", post, "--app", "web", "--to", "production", "--revision", desired)
	must(t, err)
	if rc.Code != 0 {
		t.Fatalf("reconcile: %d %s %s", rc.Code, rc.Stdout, rc.Stderr)
	}
	git(t, ctx, post, "fetch", "-q", "origin")
	onMain, err := promotion.Parse("record", []byte(git(t, ctx, post, "show", "origin/main:"+promotion.RecordPath("web", "production"))))
	must(t, err)
	if onMain.PromotionID != wantID || onMain.State != promotion.Reconciling || onMain.Reconciling.DesiredRevision != desired {
		t.Fatalf("record after reconcile: %s %s %+v", onMain.PromotionID, onMain.State, onMain.Reconciling)
	}

	// Flux applies main's tip: the reconcile commit, later than the desired
	// one and rendering the same objects (the records live on the watched
	// branch). The real event reaches the notifier, which accepts the later
	// commit because the Acceptance declares the approved rendered hash.
	applied := git(t, ctx, post, "rev-parse", "origin/main")
	if applied == desired {
		t.Fatal("reconcile pushed no commit on main")
	}
	ev, tip := c.deliver(applied, a, wantID)
	if ev.DesiredRevision != desired || ev.ObservedRevision != applied || !strings.Contains(ev.Reason, "later than the desired "+desired) {
		t.Fatalf("evidence: desired %s observed %s reason %q, want desired %s observed %s", ev.DesiredRevision, ev.ObservedRevision, ev.Reason, desired, applied)
	}
	git(t, ctx, post, "merge-base", "--is-ancestor", desired, applied)
	if ev.ArtifactDigest != a || len(ev.Pods) == 0 {
		t.Fatalf("evidence: digest %s, pods %+v", ev.ArtifactDigest, ev.Pods)
	}
	for _, p := range ev.Pods {
		if p.Declared != a || !strings.HasSuffix(p.ImageID, "@"+a) || p.Outcome != "Verified" {
			t.Fatalf("evidence pod %+v: want imageID on %s", p, a)
		}
	}
	var pods corev1.PodList
	must(t, cl.List(ctx, &pods, client.InNamespace(chainNS)))
	live := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		for _, cs := range p.Status.ContainerStatuses {
			if !strings.HasSuffix(cs.ImageID, "@"+a) {
				t.Fatalf("Pod %s runs %s, want %s", p.Name, cs.ImageID, a)
			}
		}
	}
	if live != 2 {
		t.Fatalf("%d Pods run, want 2 on %s", live, a)
	}
	final := clone(t, ctx, remoteURL)
	recFinal, err := promotion.Parse("record", []byte(git(t, ctx, final, "show", tip+":"+promotion.RecordPath("web", "production"))))
	must(t, err)
	if recFinal.State != promotion.Accepted || recFinal.PromotionID != wantID || recFinal.Accepted.ObservedRevision != applied || recFinal.Accepted.RuntimeEvidence != evidence.Path("production", "web", wantID) {
		t.Fatalf("final record %s %s %+v", recFinal.PromotionID, recFinal.State, recFinal.Accepted)
	}

	// The rollback's own acceptance is history now: previous is B again.
	again, err := cli(ctx, final, "rollback", "--repo", final, "--app", "web", "--env", "production", "--to", "previous", "-o", "json")
	must(t, err)
	if again.Code != 0 || !strings.Contains(again.Stdout, recB.PromotionID) {
		t.Fatalf("rollback after the rollback: %d %s %s", again.Code, again.Stdout, again.Stderr)
	}
}

// desire commits, in the CI work tree ci, production's overlay pinned to
// digest (tag) and then the record of attempt n of it, RECONCILING at the
// overlay commit (its VERIFIED and APPROVED gates as promote would have
// recorded them), and pushes main. It returns the record.
func (c *chain) desire(ci, tag, digest string, n int) *promotion.Record {
	t, ctx := c.t, c.ctx
	t.Helper()
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + chainNS + "\nresources:\n  - ../../base\nimages:\n  - name: " +
		c.imageRep + "\n    newTag: \"" + tag + "@" + digest + "\"\n"
	must(t, os.WriteFile(filepath.Join(ci, overlay, "kustomization.yaml"), []byte(k), 0o644))
	// The Flux setup: the Acceptance is committed in the overlay.
	if res, err := cli(ctx, ci, "render", "--write-acceptance", "--root", ci, filepath.Join(ci, overlay)); err != nil || res.Code != 0 {
		t.Fatalf("render --write-acceptance: %v %+v", err, res)
	}
	git(t, ctx, ci, "add", ".")
	git(t, ctx, ci, "commit", "-q", "-m", "production desires web "+tag)
	desired := git(t, ctx, ci, "rev-parse", "HEAD")
	res, err := cli(ctx, ci, "render", "--hash", "--root", ci, filepath.Join(ci, overlay))
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("render: %d %s", res.Code, res.Stderr)
	}
	hash := strings.TrimSpace(res.Stdout)
	ver, err := cli(ctx, ci, "version")
	must(t, err)
	version := strings.TrimSpace(ver.Stdout)
	t0 := time.Now().Add(-time.Minute)
	rec, err := promotion.NewCandidate("web", n,
		promotion.Artifact{Image: c.imageRep + ":" + tag + "@" + digest, Digest: digest, SourceCommit: strings.Repeat("1", 40)},
		promotion.Target{Environment: "production", Path: overlay, Cluster: "production", RenderedHash: hash, BaseRenderedHash: hash, Renderer: version},
		t0, "e2e")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40), RenderedHash: hash, RuntimeEvidence: "evidence/staging/web/x.json"}, t0, "e2e"))
	must(t, rec.Approve("alice", rec.InputFor(version), t0.Add(time.Hour), t0))
	must(t, rec.Reconcile(desired, t0, "e2e"))
	data, err := rec.Marshal()
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(ci, "promotion", "web"), 0o755))
	must(t, os.WriteFile(filepath.Join(ci, promotion.RecordPath("web", "production")), data, 0o644))
	git(t, ctx, ci, "add", ".")
	git(t, ctx, ci, "commit", "-q", "-m", "promotion "+rec.PromotionID+" RECONCILING")
	git(t, ctx, ci, "push", "-q", "origin", "main")
	return rec
}

// startNotifier runs the notifier on its own clone, committing to main,
// and points the shipped Flux Provider, Alert and Secret at it, for the
// Kustomization web-production.
func (c *chain) startNotifier(root string) {
	t, ctx := c.t, c.ctx
	key := []byte("hmac-key-0123456789")
	work := clone(t, ctx, c.remote)
	repo, err := gitrepo.Open(ctx, work)
	must(t, err)
	repo.Env = gitEnv(work)
	dyn, err := dynamic.NewForConfig(c.api.Config)
	must(t, err)
	proc := &notifier.Processor{Git: &evidence.GitSink{Repo: repo, Branch: "main", Signer: c.key}, Live: &notifier.KubeAcceptances{Client: dyn}}
	h, err := notifier.New(notifier.Config{FluxKey: key, Rate: -1}, proc, nil)
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	cl := c.api.Client
	must(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}}))
	for _, f := range []string{"notifier-secret.yaml", "notifier-provider.yaml", "notifier-alert.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "deploy", "flux", f))
		must(t, err)
		u := &unstructured.Unstructured{}
		must(t, sigyaml.Unmarshal(raw, &u.Object))
		switch u.GetKind() {
		case "Secret":
			must(t, unstructured.SetNestedField(u.Object, string(key), "stringData", "token"))
		case "Provider":
			must(t, unstructured.SetNestedField(u.Object, srv.URL+"/v1/flux", "spec", "address"))
		case "Alert":
			u.SetName("throughline-web-production")
			must(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{"kind": "Kustomization", "name": ksName}}, "spec", "eventSources"))
			must(t, unstructured.SetNestedStringMap(u.Object, map[string]string{"app": "web", "environment": "production"}, "spec", "eventMetadata"))
		}
		must(t, cl.Create(ctx, u))
	}
	c.ks = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": ksName, "namespace": fluxNS},
		// targetNamespace binds the namespace the notifier reads the Acceptance in.
		"spec": map[string]any{"interval": "5m", "path": "./" + overlay, "prune": true, "wait": true,
			"targetNamespace": chainNS, "sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops"}},
	}}
	must(t, cl.Create(ctx, c.ks))
}

// deliver plays Flux's kustomize-controller applying commit desired (the
// desired commit or a later one)
// (the objects throughline render prints for it, Acceptance included, by
// server-side apply), the deployment controller and kubelet rolling out
// new Pods on digest, waits for the real Acceptance controller to verify
// them, then sends kustomize-controller's ReconciliationSucceeded event
// through the real notification-controller until the notifier commits the
// evidence of promotionID on main. It returns the evidence and main's tip.
func (c *chain) deliver(desired, digest, promotionID string) (*evidence.Record, string) {
	t, ctx, cl := c.t, c.ctx, c.api.Client
	t.Helper()
	c.rollout++
	// kustomize-controller: apply the render of the desired commit.
	tree := clone(t, ctx, c.remote)
	git(t, ctx, tree, "checkout", "-q", desired)
	res, err := cli(ctx, tree, "render", "--root", tree, "--app", "web", "--environment", "production", "-o", "json", filepath.Join(tree, overlay))
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("render at %s: %d %s", desired, res.Code, res.Stderr)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	must(t, json.Unmarshal([]byte(res.Stdout), &list))
	// Flux applies the overlay as kustomize builds it: the committed
	// Acceptance, never one recomputed from the render.
	committed, err := os.ReadFile(filepath.Join(tree, overlay, "throughline-acceptance.yaml"))
	must(t, err)
	acc := map[string]any{}
	must(t, sigyaml.Unmarshal(committed, &acc))
	items := []map[string]any{acc}
	for _, item := range list.Items {
		if item["kind"] != "Acceptance" {
			items = append(items, item)
		}
	}
	for _, item := range items {
		u := &unstructured.Unstructured{Object: item}
		if u.GetNamespace() == "" {
			u.SetNamespace(chainNS)
		}
		must(t, cl.Patch(ctx, u, client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership))
	}
	// The deployment controller and kubelet: a ReplicaSet of the new
	// template, its Pods running digest, the old ones gone.
	d := &appsv1.Deployment{}
	must(t, cl.Get(ctx, client.ObjectKey{Namespace: chainNS, Name: "web"}, d))
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, "@"+digest) {
		t.Fatalf("the desired commit %s renders %s, want %s", desired, img, digest)
	}
	hash := fmt.Sprintf("r%d", c.rollout)
	tpl := d.Spec.Template.DeepCopy()
	tpl.Labels[health.LabelPodTemplateHash] = hash
	sel := d.Spec.Selector.DeepCopy()
	sel.MatchLabels[health.LabelPodTemplateHash] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: chainNS, Name: "web-" + hash, Labels: tpl.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: sel, Template: *tpl},
	}
	must(t, cl.Create(ctx, rs))
	var old corev1.PodList
	must(t, cl.List(ctx, &old, client.InNamespace(chainNS)))
	for i := range old.Items {
		must(t, cl.Delete(ctx, &old.Items[i], client.GracePeriodSeconds(0)))
	}
	for i := int32(0); i < *d.Spec.Replicas; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: chainNS, Name: fmt.Sprintf("web-%s-%d", hash, i), Labels: tpl.Labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: *tpl.Spec.DeepCopy(),
		}
		p.Spec.NodeName = nodeName
		must(t, cl.Create(ctx, p))
		p.Status.Phase = corev1.PodRunning
		for _, ctr := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: ctr.Name, Image: ctr.Image, ImageID: "docker-pullable://" + c.imageRep + "@" + digest, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			})
		}
		must(t, cl.Status().Update(ctx, p))
	}
	must(t, cl.Get(ctx, client.ObjectKeyFromObject(d), d))
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = *d.Spec.Replicas, *d.Spec.Replicas, *d.Spec.Replicas, *d.Spec.Replicas
	must(t, cl.Status().Update(ctx, d))

	// The real verifier marks the Acceptance Ready for this generation.
	deadline := time.Now().Add(90 * time.Second)
	for {
		u := health.NewAcceptance()
		must(t, cl.Get(ctx, client.ObjectKey{Namespace: chainNS, Name: "web"}, u))
		st, err := health.ReadStatus(u)
		must(t, err)
		spec, _, _ := unstructured.NestedString(u.Object, "spec", "renderedHash")
		ready := metaReady(st)
		if ready != nil && ready.Status == metav1.ConditionTrue && st.ObservedGeneration == u.GetGeneration() && st.RenderedHash == spec {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Acceptance web not verified for %s within 90s: %+v", digest, ready)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// kustomize-controller reports the applied revision and its event.
	revision := "main@sha1:" + desired
	must(t, cl.Get(ctx, client.ObjectKeyFromObject(c.ks), c.ks))
	must(t, unstructured.SetNestedField(c.ks.Object, revision, "status", "lastAppliedRevision"))
	must(t, cl.Status().Update(ctx, c.ks))
	rec, err := events.NewRecorder(testr.New(t), c.events, "kustomize-controller", events.WithScheme(c.api.Scheme))
	must(t, err)
	done := make(chan struct{})
	go func() {
		for attempt := 1; ; attempt++ {
			rec.AnnotatedEventf(c.ks, nil, map[string]string{"kustomize.toolkit.fluxcd.io/revision": revision},
				corev1.EventTypeNormal, "ReconciliationSucceeded", "", "Reconciliation finished, rollout %d attempt %d", c.rollout, attempt)
			select {
			case <-done:
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	defer close(done)
	return c.waitEvidence(promotionID)
}

func metaReady(st v1alpha1.AcceptanceStatus) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1alpha1.ConditionReady {
			return &st.Conditions[i]
		}
	}
	return nil
}

// waitEvidence waits until main's record of web in production is ACCEPTED
// as promotionID and returns the evidence file of that commit and the
// commit.
func (c *chain) waitEvidence(promotionID string) (*evidence.Record, string) {
	t, ctx := c.t, c.ctx
	t.Helper()
	dir := clone(t, ctx, c.remote)
	deadline := time.Now().Add(90 * time.Second)
	for {
		git(t, ctx, dir, "fetch", "-q", "origin")
		tip := git(t, ctx, dir, "rev-parse", "origin/main")
		rec, err := promotion.Parse("record", []byte(git(t, ctx, dir, "show", tip+":"+promotion.RecordPath("web", "production"))))
		must(t, err)
		if rec.PromotionID == promotionID && rec.State == promotion.Accepted {
			p := evidence.Path("production", "web", promotionID)
			ev, err := evidence.Parse(p, []byte(git(t, ctx, dir, "show", tip+":"+p)))
			must(t, err)
			if ev.Decision != promotion.Accepted || ev.ReportedBy.Source != "flux" {
				t.Fatalf("evidence %+v", ev)
			}
			t.Logf("evidence commit %s: %s", tip[:12], git(t, ctx, dir, "log", "-1", "--format=%s", tip))
			return ev, tip
		}
		if rec.PromotionID == promotionID && promotion.Terminal(rec.State) {
			t.Fatalf("promotion %s is %s: %s", promotionID, rec.State, rec.Reason)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no evidence for %s within 90s (record %s %s)", promotionID, rec.PromotionID, rec.State)
		}
		time.Sleep(time.Second)
	}
}
