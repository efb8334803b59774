//go:build e2e

package fluxcontrol

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
)

const (
	fluxNS    = "flux-system"
	appNS     = "checkout-staging" // the staging overlay's namespace:
	ksName    = "checkout-staging" // examples/flux/clusters/staging/checkout.yaml
	overlay   = "apps/checkout/overlays/staging"
	accName   = "checkout"
	digest    = "sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432" // the overlay's pin
	imageRepo = "ghcr.io/throughline-dev/checkout"

	ksAPI  = "kustomize.toolkit.fluxcd.io/v1"
	srcAPI = "source.toolkit.fluxcd.io/v1"
	accAPI = "throughline.dev/v1alpha1"
)

// deliveries records what the notifier made of each delivery.
type deliveries struct {
	mu  sync.Mutex
	all []notifier.Delivery
}

func (d *deliveries) log(x notifier.Delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.all = append(d.all, x)
}

func (d *deliveries) list() []notifier.Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]notifier.Delivery(nil), d.all...)
}

// startNotifier runs the notifier's receivers (the same handler as throughline
// serve) on a clone of the GitOps repository, behind the shipped Flux Provider
// and an Alert for staging's Kustomization.
func startNotifier(ctx context.Context, t *testing.T, api *testenv.APIServer, g *gitops, root string) *deliveries {
	t.Helper()
	work := filepath.Join(t.TempDir(), "notifier")
	testenv.Git(t, ctx, g.env, filepath.Dir(work), "clone", "-q", g.remote, work)
	repo, err := gitrepo.Open(ctx, work)
	must(t, err)
	dyn, err := dynamic.NewForConfig(api.Config)
	must(t, err)
	key := []byte("hmac-key-0123456789")
	got := &deliveries{}
	// As serve configures it with the resync on (its default): the
	// reconcileDeadline HALT is the resync's (the tests run its passes).
	proc := &notifier.Processor{Git: &evidence.GitSink{Repo: repo, Branch: "main", Signer: g.notifier}, Live: &notifier.KubeAcceptances{Client: dyn},
		ResyncDecidesDeadline: true}
	h, err := notifier.New(notifier.Config{FluxKey: key, Rate: -1, Log: got.log}, proc, nil)
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	installAlert(ctx, t, api.Client, root, srv.URL+"/v1/flux", key, ksName, "staging")
	return got
}

// TestFluxAppliesAndWaitsForAcceptance: examples/gitops-env with staging's
// committed Acceptance, reconciled by Flux's real source-controller and
// kustomize-controller (the example's own Kustomization, wait: true), the
// Acceptance verified by the real verifier, the Deployment rolled out by the
// real kube-controller-manager; the test plays only the kubelet (no
// container runtime in the harness).
func TestFluxAppliesAndWaitsForAcceptance(t *testing.T) {
	testenv.RequireFluxControllers(t)
	testenv.RequireNotificationController(t)
	root := testenv.RepoRoot(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	nc := testenv.StartNotificationController(t, api)
	fc := testenv.StartFluxControllers(t, api, testenv.FluxControllersOptions{EventsURL: nc.EventsURL})
	t.Logf("real components: kube-apiserver v%s, %s, notification-controller v%s",
		testenv.K8sVersion, fc.Versions, testenv.NotificationCtlVersion)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	c := api.Client
	testenv.StartControllerManager(ctx, t, api) // the real deployment controller; k.rollout plays the kubelet
	testenv.StartVerifier(ctx, t, api.Config)
	namespace(ctx, t, c, fluxNS)
	namespace(ctx, t, c, appNS)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-amd64",
		Labels: map[string]string{corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}
	must(t, c.Create(ctx, node))
	k := &kube{t: t, ctx: ctx, c: c, node: node.Name}

	// The documented Flux setup (docs/install-flux.md): the Acceptance is
	// committed into the overlay, and the PR job's check passes on it.
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{})
	g := newGitOps(ctx, t, gs, root)
	if r := g.cli("render", "--write-acceptance", filepath.Join(g.dir, overlay)); r.Code != 0 {
		t.Fatalf("render --write-acceptance: exit %d: %s", r.Code, r.Stderr)
	}
	if r := g.cli("render", "--check-acceptance", filepath.Join(g.dir, overlay)); r.Code != 0 {
		t.Fatalf("render --check-acceptance on the written Acceptance: exit %d: %s", r.Code, r.Stderr)
	}
	desired := g.commit("examples/gitops-env with staging's Acceptance")
	// Staging's promotion record, RECONCILING towards that commit, lands on
	// the branch Flux watches in the next commit (a record cannot name the
	// commit that carries it): Flux applies this later commit, which renders
	// the same objects, and the notifier accepts it as such.
	promotionID := writeStagingRecord(t, g, desired)
	commit := g.commit("promotion: checkout RECONCILING in staging towards " + desired[:12])
	g.git("push", "-q", "origin", "main")
	deliv := startNotifier(ctx, t, api, g, root)

	// The source and the example's Kustomization, as a cluster would have them.
	repoSrc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": srcAPI, "kind": "GitRepository",
		"metadata": map[string]any{"name": "gitops-env", "namespace": fluxNS},
		"spec":     map[string]any{"interval": "1m", "url": g.remote, "ref": map[string]any{"branch": "main"}},
	}}
	must(t, c.Create(ctx, repoSrc))
	// The example file carries the Kustomization, its target namespace
	// (kustomize-controller creates no namespace: the example syncs on its
	// first try only with it; the test created it above, with its default
	// ServiceAccount, as the serviceaccounts controller would), and the
	// ServiceAccount it applies as, bound to admin in that namespace only.
	aggregateAcceptances(ctx, t, c, root)
	ks := applyExample(ctx, t, c, root, "staging")
	if ks.GetName() != ksName || ks.GetNamespace() != fluxNS {
		t.Fatalf("%s: Kustomization %s/%s, want %s/%s", exampleFile(root, "staging"), ks.GetNamespace(), ks.GetName(), fluxNS, ksName)
	}
	if w, _, _ := unstructured.NestedBool(ks.Object, "spec", "wait"); !w {
		t.Fatalf("the example Kustomization does not set wait: true; the test relies on it")
	}

	// Arrow "desired commit -> source artifact": source-controller fetched
	// main from the Git server.
	want := fluxRevision(commit)
	eventually(ctx, t, 2*time.Minute, "GitRepository artifact revision", func() string {
		u, why := get(ctx, c, srcAPI, "GitRepository", fluxNS, "gitops-env")
		if why != "" {
			return why
		}
		if rev, _, _ := unstructured.NestedString(u.Object, "status", "artifact", "revision"); rev != want {
			s, r, m := ready(u)
			return "artifact revision " + rev + ", want " + want + "; Ready " + s + " " + r + ": " + m
		}
		return ""
	})

	// Arrow "rendered output -> live objects": kustomize-controller applied
	// the overlay, the committed Acceptance included, in the overlay's namespace.
	var acc *unstructured.Unstructured
	eventually(ctx, t, 2*time.Minute, "Kustomization applied the Acceptance", func() string {
		var why string
		if acc, why = get(ctx, c, accAPI, "Acceptance", appNS, accName); why != "" {
			u, w2 := get(ctx, c, ksAPI, "Kustomization", fluxNS, ksName)
			if w2 == "" {
				s, r, m := ready(u)
				why += "; Kustomization Ready " + s + " " + r + ": " + m
			}
			return why
		}
		return ""
	})
	for _, o := range []struct{ apiVersion, kind, name string }{
		{"apps/v1", "Deployment", "checkout"}, {"v1", "Service", "checkout"},
		{"networking.k8s.io/v1", "Ingress", "checkout"}, {"batch/v1", "CronJob", "checkout-reconcile-payments"},
	} {
		if _, why := get(ctx, c, o.apiVersion, o.kind, appNS, o.name); why != "" {
			t.Fatalf("Kustomization applied the Acceptance but not the overlay's objects: %s", why)
		}
	}
	if acc.GetLabels()["kustomize.toolkit.fluxcd.io/name"] != ksName {
		t.Errorf("the Acceptance lacks Flux's ownership label: labels %v", acc.GetLabels())
	}

	// kstatus holds the Kustomization: no Pods run the declared image yet,
	// so the Acceptance is not verified and the Kustomization is not Ready.
	time.Sleep(6 * time.Second) // one health-check round (every ~5 s)
	ksNow, _ := get(ctx, c, ksAPI, "Kustomization", fluxNS, ksName)
	if s, r, m := ready(ksNow); s == "True" {
		t.Fatalf("Kustomization Ready before the Acceptance was verified: %s: %s", r, m)
	} else {
		t.Logf("before verification: Kustomization Ready %s %s: %s; lastAppliedRevision %q", s, r, m, nested(ksNow, "status", "lastAppliedRevision"))
	}
	if s, r, _ := ready(acc); s == "True" {
		t.Fatalf("Acceptance Ready (%s) with no Pods running", r)
	}

	// The real controllers roll out, the test plays the kubelet; the verifier
	// (real) verifies the live images against the committed Acceptance.
	k.rollout(appNS, "checkout", "h1", imageRepo+"@"+digest)
	var verifiedAt time.Time
	eventually(ctx, t, time.Minute, "verifier: Acceptance verified", func() string {
		u, why := get(ctx, c, accAPI, "Acceptance", appNS, accName)
		if why != "" {
			return why
		}
		s, r, m := ready(u)
		if r != v1alpha1.ReasonVerified {
			return "Ready " + s + " " + r + ": " + m
		}
		ts, err := time.Parse(time.RFC3339, nested(u, "status", "verifiedAt"))
		if err != nil {
			return "verifiedAt: " + err.Error()
		}
		verifiedAt = ts
		return ""
	})

	// Arrow "desired commit -> observed revision", from the Kustomization's
	// own status: Ready only now, at the revision Flux reports.
	eventually(ctx, t, 2*time.Minute, "Kustomization Ready at the desired commit", func() string {
		u, why := get(ctx, c, ksAPI, "Kustomization", fluxNS, ksName)
		if why != "" {
			return why
		}
		s, r, m := ready(u)
		if s != "True" {
			return "Ready " + s + " " + r + ": " + m
		}
		// Under load a read can see Ready before the revision it applied
		// (observed once in CI): wait for both, and fail with the arrow at
		// the deadline if they never agree.
		if got := nested(u, "status", "lastAppliedRevision"); got != want {
			return fmt.Sprintf("observed revision: Kustomization lastAppliedRevision %q, want %q", got, want)
		}
		if !strings.Contains(m, want) {
			return fmt.Sprintf("Kustomization Ready message %q does not name %s", m, want)
		}
		res, err := status.Compute(u)
		must(t, err)
		if res.Status != status.CurrentStatus {
			return "kstatus " + string(res.Status)
		}
		ksNow = u
		return ""
	})
	if lt := readyTransition(t, ksNow); lt.Before(verifiedAt) {
		t.Fatalf("Kustomization Ready at %s, before the Acceptance was verified at %s", lt, verifiedAt)
	} else {
		_, _, m := ready(ksNow)
		t.Logf("Kustomization Ready at %s (Acceptance verified at %s): lastAppliedRevision %q, %q",
			lt.Format(time.TimeOnly), verifiedAt.Format(time.TimeOnly), nested(ksNow, "status", "lastAppliedRevision"), m)
	}

	// Arrow "staging observed revision -> staging runtime evidence": the
	// events kustomize-controller sent through the real
	// notification-controller reached the notifier, which committed the
	// evidence to the Git server for the revision the Kustomization's own
	// status reports.
	evCommit := stagingEvidence(ctx, t, g, deliv, ksNow, desired, promotionID)

	// A commit the PR check refuses never reaches main, so Flux never sees
	// it: the Kustomization stays at main and the live Acceptance unchanged.
	for _, tc := range []struct {
		name string
		want string // in the PR check's refusal
		edit func(t *testing.T, g *gitops)
	}{
		{"wrong rendered hash in the committed Acceptance", "the committed Acceptance is stale", func(t *testing.T, g *gitops) {
			g.replace(filepath.Join(overlay, "throughline-acceptance.yaml"), acc.Object["spec"].(map[string]any)["renderedHash"].(string),
				"sha256:"+strings.Repeat("0", 64))
		}},
		{"unpinned image", "unpinned-image", func(t *testing.T, g *gitops) {
			g.replace(filepath.Join(overlay, "kustomization.yaml"), `newTag: "1.4.2@`+digest+`"`, `newTag: "1.4.2"`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedBeforeFlux(ctx, t, c, g, tc.name, tc.want, tc.edit)
		})
	}

	// The evidence commit is on main: Flux applies it too (same objects),
	// kustomize-controller reports it through the real
	// notification-controller, and the notifier, its record already
	// ACCEPTED, commits nothing more.
	repeatedEventCommitsNothing(ctx, t, c, g, deliv, evCommit)
}

// refusedBeforeFlux makes a PR branch with edit, runs the PR check on it
// (refused, saying want), pushes the branch (never merged), asks
// source-controller to reconcile and checks that Flux still serves main.
func refusedBeforeFlux(ctx context.Context, t *testing.T, c client.Client, g *gitops, name, want string, edit func(*testing.T, *gitops)) {
	branch := "pr-" + strings.ReplaceAll(name, " ", "-")
	g.git("fetch", "-q", "origin")
	g.git("checkout", "-q", "-B", branch, "origin/main")
	edit(t, g)
	pr := g.commit("PR: " + name)
	r := g.cli("render", "--check-acceptance", filepath.Join(g.dir, overlay))
	if r.Code != 3 || !strings.Contains(r.Stderr, want) {
		t.Fatalf("PR check on %s: exit %d, want 3 saying %q: %s", pr, r.Code, want, r.Stderr)
	}
	g.git("push", "-q", "origin", branch)
	accBefore, why := get(ctx, c, accAPI, "Acceptance", appNS, accName)
	if why != "" {
		t.Fatal(why)
	}
	// Ask source-controller to fetch now and wait until it has handled that.
	src, why := get(ctx, c, srcAPI, "GitRepository", fluxNS, "gitops-env")
	if why != "" {
		t.Fatal(why)
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	ann := src.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["reconcile.fluxcd.io/requestedAt"] = at
	src.SetAnnotations(ann)
	must(t, c.Update(ctx, src))
	eventually(ctx, t, time.Minute, "GitRepository handled the reconcile request", func() string {
		u, why := get(ctx, c, srcAPI, "GitRepository", fluxNS, "gitops-env")
		if why != "" {
			return why
		}
		if got := nested(u, "status", "lastHandledReconcileAt"); got != at {
			return "lastHandledReconcileAt " + got
		}
		src = u
		return ""
	})
	main := strings.Fields(g.git("ls-remote", "origin", "refs/heads/main"))[0]
	if rev := nested(src, "status", "artifact", "revision"); rev != fluxRevision(main) {
		t.Fatalf("GitRepository artifact revision %q, want main's %s (the refused PR is %s)", rev, fluxRevision(main), pr)
	}
	ks, _ := get(ctx, c, ksAPI, "Kustomization", fluxNS, ksName)
	if rev := nested(ks, "status", "lastAppliedRevision"); strings.HasSuffix(rev, pr) {
		t.Fatalf("Kustomization applied the refused commit %s", rev)
	}
	accNow, why := get(ctx, c, accAPI, "Acceptance", appNS, accName)
	if why != "" {
		t.Fatal(why)
	}
	if a, b := nested(accBefore, "spec", "renderedHash"), nested(accNow, "spec", "renderedHash"); a != b {
		t.Fatalf("live Acceptance renderedHash changed from %s to %s", a, b)
	}
	g.git("checkout", "-q", "main")
}

func nested(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

// readyTransition is the lastTransitionTime of the Ready condition.
func readyTransition(t *testing.T, u *unstructured.Unstructured) time.Time {
	t.Helper()
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			s, _ := m["lastTransitionTime"].(string)
			ts, err := time.Parse(time.RFC3339, s)
			must(t, err)
			return ts
		}
	}
	t.Fatalf("no Ready condition in %v", u.Object["status"])
	return time.Time{}
}
