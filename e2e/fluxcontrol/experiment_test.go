//go:build e2e

package fluxcontrol

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promote"
	"github.com/throughline-dev/throughline/promotion"
)

// lab is the world of the seeds' experiments through Flux: staging and
// production of examples/gitops-env, each applied by its own real
// Kustomization from the Git server, both pinned to digest A of a real
// registry; production's promotion record ACCEPTED for A through the real
// notification-controller and the notifier. Real: kube-apiserver,
// source-controller, kustomize-controller, notification-controller, the
// verifier, the registry, the Git server, the throughline CLI. Played: the
// deployment controller and the kubelet (kube.rollout).
type lab struct {
	t     *testing.T
	ctx   context.Context
	c     client.Client
	g     *gitops
	k     *kube
	deliv *deliveries
	kc    string // kubeconfig of an operator, for breakglass
	cfg   *rest.Config

	reg        *testenv.Registry
	repo       string // the app's image repository on the registry
	a, b       string // digests A (both environments at the start) and B (CI's new build)
	alice, bob sshkey.Key
	rolls      int
	accepted   map[string]string // environment -> promotion id of its last ACCEPTED record
}

// envOf is one environment of the example: its overlay, namespace (also
// the Kustomization's name) and cluster in the registry of
// throughline-policy.yaml.
type envOf struct{ name, overlay, ns, cluster string }

var (
	stagingEnv    = envOf{"staging", overlay, appNS, "staging-eu-1"}
	productionEnv = envOf{"production", "apps/checkout/overlays/production", "checkout-production", "prod-eu-1"}
)

// TestFluxExperiments runs the seeds' experiments against the real Flux
// controllers, in one world: 3 (staging's overlay copied over
// production's), 2 (a moving tag), 1 (the positive chain A -> B), 6 (the
// rollback to A) and 5 (break-glass against kustomize-controller). The
// refusals go first: each leaves the world as it found it.
func TestFluxExperiments(t *testing.T) {
	l := newLab(t)
	for _, x := range []struct {
		name string
		run  func(*lab, *testing.T)
	}{
		{"experiment 3: directory copy", (*lab).directoryCopy},
		{"experiment 2: tag drift", (*lab).tagDrift},
		{"experiment 1: chain A to B", (*lab).chain},
		{"experiment 6: rollback to A", (*lab).rollbackToA},
		{"experiment 5: break-glass", (*lab).breakGlass},
	} {
		if !t.Run(x.name, func(t *testing.T) { x.run(l.on(t), t) }) {
			t.Fatalf("%s failed: the later experiments build on it", x.name)
		}
	}
}

// on returns l reporting to t (a subtest).
func (l *lab) on(t *testing.T) *lab {
	l.t, l.g.t, l.k.t = t, t, t
	return l
}

func newLab(t *testing.T) *lab {
	testenv.RequireFluxControllers(t)
	testenv.RequireNotificationController(t)
	testenv.RequireControllerManager(t)
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	nc := testenv.StartNotificationController(t, api)
	fc := testenv.StartFluxControllers(t, api, testenv.FluxControllersOptions{EventsURL: nc.EventsURL})
	t.Logf("real components: kube-apiserver v%s, %s, notification-controller v%s, docker-registry",
		testenv.K8sVersion, fc.Versions, testenv.NotificationCtlVersion)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	t.Cleanup(cancel)
	c := api.Client
	testenv.StartVerifier(ctx, t, api.Config)
	testenv.StartControllerManager(ctx, t, api) // the real deployment controller; l.roll plays the kubelet
	for _, ns := range []string{fluxNS, stagingEnv.ns, productionEnv.ns} {
		namespace(ctx, t, c, ns)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-amd64",
		Labels: map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}
	must(t, c.Create(ctx, node))
	kc, err := api.Kubeconfig("operator", "")
	must(t, err)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	l := &lab{t: t, ctx: ctx, c: c, cfg: api.Config, k: &kube{t: t, ctx: ctx, c: c, node: node.Name}, kc: kc, reg: reg,
		repo: reg.Host + "/shop/checkout", accepted: map[string]string{},
		alice: sshkey.New(t, "alice@example.com"), bob: sshkey.New(t, "bob@example.com")}
	l.a, l.b = l.push("1.4.2"), l.push("1.5.0")

	// The repository: the example with the approvers' keys, both overlays
	// pinned to A on the registry, their Acceptances committed (the Flux
	// setup), no record yet (the example's name ghcr.io digests).
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{})
	l.g = newGitOps(ctx, t, gs, root)
	l.g.env = append(l.g.env, "THROUGHLINE_CACHE_DIR="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	must(t, os.RemoveAll(filepath.Join(l.g.dir, "promotion")))
	must(t, os.RemoveAll(filepath.Join(l.g.dir, "evidence")))
	must(t, os.WriteFile(filepath.Join(l.g.dir, "allowed-signers"), []byte(sshkey.Signers(l.alice, l.bob)), 0o644))
	for _, e := range []envOf{stagingEnv, productionEnv} {
		l.pin(e, "1.4.2", l.a)
	}
	desired := l.g.commit("staging and production run checkout 1.4.2 (A)")
	l.g.git("push", "-q", "origin", "main")
	// Production is adopted as it runs when throughline is installed
	// (throughline adopt): its baseline A becomes ACCEPTED through the
	// notifier's live verification, the rollback target of experiment 6.
	r := l.run("adopt", "--repo", l.g.dir, "--app", accName, "--env", "production", "--by", "platform-team", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("setup: adopt production: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	var adopted promote.Adoption
	must(t, json.Unmarshal([]byte(r.Stdout), &adopted))
	prodA := adopted.Record.PromotionID
	if adopted.Revision != desired || adopted.Record.Artifact.Digest != l.a || adopted.Record.State != promotion.Reconciling {
		t.Fatalf("setup: adopt production: %s %s of %s at %.12s, want RECONCILING A at %.12s", prodA, adopted.Record.State,
			adopted.Record.Artifact.Digest, adopted.Revision, desired)
	}

	l.deliv = startNotifier(ctx, t, api, l.g, root)
	for _, u := range readYAML(t, filepath.Join(root, "deploy", "flux", "notifier-alert.yaml")) {
		must(t, c.Create(ctx, u)) // the shipped Alert: checkout in production
	}
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": srcAPI, "kind": "GitRepository",
		"metadata": map[string]any{"name": "gitops-env", "namespace": fluxNS},
		"spec":     map[string]any{"interval": "1m", "url": l.g.remote, "ref": map[string]any{"branch": "main"}},
	}}))
	aggregateAcceptances(ctx, t, c, root)
	for _, e := range []envOf{stagingEnv, productionEnv} {
		applyExample(ctx, t, c, root, e.name)
	}
	tip := l.tip()
	for _, e := range []envOf{stagingEnv, productionEnv} {
		l.applied(e, l.a, "setup: "+e.name+" applies A")
		l.roll(e, l.a)
	}
	ev, evTip := l.evidence(productionEnv, prodA, "setup: production evidence for A")
	if ev.ObservedRevision != tip || ev.ArtifactDigest != l.a {
		t.Fatalf("setup: production evidence observed %s digest %s, want %s and A %s", ev.ObservedRevision, ev.ArtifactDigest, tip, l.a)
	}
	l.ready(productionEnv, evTip, "setup: production Ready at the evidence commit")
	l.ready(stagingEnv, evTip, "setup: staging Ready at the evidence commit")
	return l
}

// push pushes a new image under tag to the registry and returns its digest.
func (l *lab) push(tag string) string {
	l.t.Helper()
	img, err := random.Image(512, 1)
	must(l.t, err)
	ref, err := name.ParseReference(l.repo+":"+tag, name.Insecure)
	must(l.t, err)
	must(l.t, remote.Write(ref, img, remote.WithContext(l.ctx), remote.WithAuth(authn.Anonymous)))
	d, err := img.Digest()
	must(l.t, err)
	return d.String()
}

// run runs the CLI in the clone (no --root added) and fails the test on a
// process error.
func (l *lab) run(args ...string) testenv.CLIResult {
	l.t.Helper()
	res, err := testenv.RunCLI(l.ctx, throughline, l.g.env, args...)
	must(l.t, err)
	return res
}

// pin writes tag@digest of the registry's repository into e's overlay (as
// CI does with pin --set) and refreshes its committed Acceptance.
func (l *lab) pin(e envOf, tag, digest string) {
	l.t.Helper()
	dir := filepath.Join(l.g.dir, e.overlay)
	if r := l.run("pin", "--root", l.g.dir, "--set", imageRepo+"="+l.repo+":"+tag+"@"+digest, dir); r.Code != 0 {
		l.t.Fatalf("pin --set in %s: exit %d: %s", e.name, r.Code, r.Stderr)
	}
	if r := l.run("render", "--root", l.g.dir, "--write-acceptance", dir); r.Code != 0 {
		l.t.Fatalf("render --write-acceptance %s: exit %d: %s", e.name, r.Code, r.Stderr)
	}
}

// reconciling writes e's promotion record of attempt n of tag@digest,
// RECONCILING towards desired, built through the promotion state machine
// as CI's promote steps would (its earlier gates synthetic: the runs of
// promote propose/verify/approve are experiment 1's), for the rendered hash
// of e's committed Acceptance. It returns the promotion id.
func (l *lab) reconciling(e envOf, tag, digest string, n int, desired string) string {
	t := l.t
	t.Helper()
	hash := ""
	for _, u := range readYAML(t, filepath.Join(l.g.dir, e.overlay, "throughline-acceptance.yaml")) {
		hash = nested(u, "spec", "renderedHash")
	}
	ver := strings.TrimSpace(l.run("version").Stdout)
	now := time.Now().UTC()
	rec, err := promotion.NewCandidate(accName, n, promotion.Artifact{Image: l.repo + ":" + tag + "@" + digest, Digest: digest,
		SourceCommit: strings.Repeat("5c", 20)}, promotion.Target{Environment: e.name, Path: e.overlay, Cluster: e.cluster,
		RenderedHash: hash, BaseRenderedHash: hash, Renderer: ver}, now, "ci")
	must(t, err)
	before := strings.Repeat("be", 20)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: before, ObservedRevision: before,
		RenderedHash: hash, RuntimeEvidence: evidence.Path("dev", accName, "checkout-dev-1")}, now, "ci"))
	must(t, rec.Approve("alice@example.com", rec.InputFor(ver), now.Add(24*time.Hour), now))
	must(t, rec.Reconcile(desired, now, "ci"))
	y, err := rec.Marshal()
	must(t, err)
	path := filepath.Join(l.g.dir, promotion.RecordPath(accName, e.name))
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, y, 0o644))
	return rec.PromotionID
}

// tip fetches and returns main's tip on the Git server; the clone's main
// follows it.
func (l *lab) tip() string {
	l.t.Helper()
	l.g.git("fetch", "-q", "origin")
	l.g.git("checkout", "-q", "main")
	l.g.git("reset", "-q", "--hard", "origin/main")
	return l.g.git("rev-parse", "HEAD")
}

// reconcileNow asks a Flux object to reconcile now (the
// reconcile.fluxcd.io/requestedAt annotation, as flux reconcile does) and
// returns the request's value.
func (l *lab) reconcileNow(apiVersion, kind, name string) string {
	l.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(fluxNS)
	u.SetName(name)
	at := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, at)
	must(l.t, l.c.Patch(l.ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))))
	return at
}

// ks reads e's Kustomization.
func (l *lab) ks(e envOf) *unstructured.Unstructured {
	l.t.Helper()
	u, why := get(l.ctx, l.c, ksAPI, "Kustomization", fluxNS, e.ns)
	if why != "" {
		l.t.Fatal(why)
	}
	return u
}

// applied asks source-controller to fetch main and waits until e's
// Kustomization has applied the clone's commit of e's overlay: the live
// Deployment declares digest and the live Acceptance is the committed one;
// arrow names the link that broke.
func (l *lab) applied(e envOf, digest, arrow string) {
	l.t.Helper()
	l.reconcileNow(srcAPI, "GitRepository", "gitops-env")
	l.reconcileNow(ksAPI, "Kustomization", e.ns)
	committed := nested(readYAML(l.t, filepath.Join(l.g.dir, e.overlay, "throughline-acceptance.yaml"))[0], "spec", "renderedHash")
	defer l.took(time.Now(), arrow)
	eventually(l.ctx, l.t, 2*time.Minute, arrow, func() string {
		u, why := get(l.ctx, l.c, ksAPI, "Kustomization", fluxNS, e.ns)
		if why != "" {
			return why
		}
		s, r, m := ready(u)
		state := fmt.Sprintf("; Kustomization at %s, Ready %s %s: %s", nested(u, "status", "lastAttemptedRevision"), s, r, m)
		d := &appsv1.Deployment{}
		if err := l.c.Get(l.ctx, client.ObjectKey{Namespace: e.ns, Name: "checkout"}, d); err != nil {
			return err.Error() + state
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, "@"+digest) {
			return "live Deployment image " + img + ", want @" + digest + state
		}
		acc, why := get(l.ctx, l.c, accAPI, "Acceptance", e.ns, accName)
		if why != "" {
			return why + state
		}
		if h := nested(acc, "spec", "renderedHash"); h != committed {
			return "live Acceptance renderedHash " + h + ", committed " + committed + state
		}
		return ""
	})
}

// ready waits until e's Kustomization is Ready with lastAppliedRevision at
// commit.
func (l *lab) ready(e envOf, commit, arrow string) *unstructured.Unstructured {
	l.t.Helper()
	l.reconcileNow(srcAPI, "GitRepository", "gitops-env")
	l.reconcileNow(ksAPI, "Kustomization", e.ns)
	want := fluxRevision(commit)
	defer l.took(time.Now(), arrow)
	var out *unstructured.Unstructured
	eventually(l.ctx, l.t, 2*time.Minute, arrow, func() string {
		u, why := get(l.ctx, l.c, ksAPI, "Kustomization", fluxNS, e.ns)
		if why != "" {
			return why
		}
		s, r, m := ready(u)
		if got := nested(u, "status", "lastAppliedRevision"); s != "True" || got != want {
			return fmt.Sprintf("lastAppliedRevision %s, want %s; Ready %s %s: %s", got, want, s, r, m)
		}
		out = u
		return ""
	})
	return out
}

// roll waits for the real deployment controller to roll e's live
// Deployment out, with the played kubelet running its Pods, and checks they
// run digest.
func (l *lab) roll(e envOf, digest string) {
	l.t.Helper()
	l.rolls++
	l.k.rollout(e.ns, "checkout", fmt.Sprintf("r%d", l.rolls), l.repo+"@"+digest)
}

// podsRun checks that every live Pod of e runs digest.
func (l *lab) podsRun(e envOf, digest, arrow string) {
	l.t.Helper()
	var pods corev1.PodList
	must(l.t, l.c.List(l.ctx, &pods, client.InNamespace(e.ns)))
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		n++
		for _, cs := range p.Status.ContainerStatuses {
			if strings.TrimPrefix(cs.ImageID, "docker-pullable://") != l.repo+"@"+digest {
				l.t.Fatalf("%s: Pod %s runs %s, want %s", arrow, p.Name, cs.ImageID, digest)
			}
		}
	}
	if n == 0 {
		l.t.Fatalf("%s: no Pod runs in %s", arrow, e.ns)
	}
}

// evidence waits until main's record of e is ACCEPTED as promotionID and
// returns the evidence file of that commit (reported by Flux, ACCEPTED) and
// the commit.
func (l *lab) evidence(e envOf, promotionID, arrow string) (*evidence.Record, string) {
	l.t.Helper()
	recPath, evPath := promotion.RecordPath(accName, e.name), evidence.Path(e.name, accName, promotionID)
	var rec *promotion.Record
	var tip string
	l.reconcileNow(srcAPI, "GitRepository", "gitops-env") // the record's commit
	defer l.took(time.Now(), arrow)
	eventually(l.ctx, l.t, 90*time.Second, arrow, func() string {
		var raw string
		raw, tip = l.g.onServer(recPath)
		var err error
		if rec, err = promotion.Parse(recPath, []byte(raw)); err != nil {
			l.t.Fatalf("%s: %s at %s: %v", arrow, recPath, tip, err)
		}
		if rec.PromotionID == promotionID && promotion.Terminal(rec.State) {
			return ""
		}
		return fmt.Sprintf("record %s %s at %s; deliveries: %s", rec.PromotionID, rec.State, tip, l.deliv.summary())
	})
	if rec.State != promotion.Accepted || rec.Accepted == nil || rec.Accepted.RuntimeEvidence != evPath {
		l.t.Fatalf("%s: record %s at %s (%s), want ACCEPTED with evidence %s", arrow, rec.State, tip, rec.Reason, evPath)
	}
	ev, err := evidence.Parse(evPath, []byte(l.g.git("show", tip+":"+evPath)))
	if err != nil {
		l.t.Fatalf("%s: %v", arrow, err)
	}
	if ev.Decision != promotion.Accepted || ev.ReportedBy.Source != "flux" || ev.Acceptance != e.ns+"/"+accName {
		l.t.Fatalf("%s: evidence %s: decision %s (%s) by %+v for %s", arrow, evPath, ev.Decision, ev.Reason, ev.ReportedBy, ev.Acceptance)
	}
	if why := ev.CheckPods(ev.ArtifactDigest); why != "" {
		l.t.Fatalf("%s: evidence Pods: %s", arrow, why)
	}
	l.accepted[e.name] = promotionID
	l.t.Logf("%s: commit %.12s: %s", arrow, tip, ev.Reason)
	return ev, tip
}

// image is the first container's image of a live Deployment.
func (l *lab) image(dep *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	s, _ := cs[0].(map[string]any)["image"].(string)
	return s
}

// took logs how long the wait for arrow took.
func (l *lab) took(start time.Time, arrow string) {
	l.t.Logf("%s: %.1fs", arrow, time.Since(start).Seconds())
}
