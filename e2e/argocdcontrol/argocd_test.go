//go:build e2e

package argocdcontrol

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

var throughlineBin string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughlineBin) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const (
	appName = "checkout-staging"
	// accName is the Acceptance's name: the app (the Application's plugin
	// parameter app), which the promotion records and the registry name.
	accName   = "checkout"
	appNS     = "checkout-staging"
	stagingKz = "apps/checkout/overlays/staging/kustomization.yaml"
	image     = "ghcr.io/throughline-dev/checkout"
	digestA   = "sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"
	digestC   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

// env is one run: the API server, Git, the Argo CD control plane and the
// verifier.
type env struct {
	t      *testing.T
	ctx    context.Context
	c      client.Client
	argoNS string
	work   string // a clone of the GitOps repository
	gitEnv []string
	// verify starts throughline serve's verifier (until the whole test ends).
	verify func()
	// application and ns are the Application the helpers read (app,
	// waitApp, refresh, waitHealthy) and its destination namespace:
	// staging's unless a copy says otherwise (production).
	application, ns string
	api             *testenv.APIServer
	remote          string
	// alice and bob are production's approvers: their keys are the
	// allowed-signers file seeded into the repository.
	alice, bob sshkey.Key
	// notifier is the notifier's evidence signing key: the policy's
	// evidenceSigners lists it for every environment.
	notifier sshkey.Notifier
}

// TestArgoCDControlPlane: examples/gitops-env's staging Application through
// the real application controller, repo-server and cmp-server. First the
// positive path (sync, Acceptance applied, Progressing until verified, then
// Healthy), then the staging evidence the notifier's resync writes from
// the controller's own status (evidence_test.go), then experiment 4 (an unpinned image reaching Argo CD: a
// ComparisonError naming the image, nothing pruned, recovery once a pinned
// commit lands).
func TestArgoCDControlPlane(t *testing.T) {
	testenv.RequireArgoCDControlPlane(t) // skip (fail in CI) before any setup
	root := testenv.RepoRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{
		CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")},
	})
	testenv.StartControllerManager(ctx, t, api) // the real deployment controller; rollout plays the kubelet
	e := &env{t: t, ctx: ctx, c: api.Client, gitEnv: testenv.GitEnv(t.TempDir()), application: appName, ns: appNS, api: api}
	remote := e.seedGit(root)
	cp := testenv.StartArgoCDControlPlane(t, api, testenv.ArgoCDControlPlaneOptions{
		PluginYAML: filepath.Join(root, "plugin.yaml"),
		PluginPath: filepath.Dir(throughlineBin),
		ConfigData: healthLua(t, root),
		Resident:   true, // as the sidecar runs: generate through throughline cmp serve
	})
	e.argoNS = cp.Namespace
	e.verify = func() { testenv.StartVerifier(ctx, t, api.Config) }

	e.remote = remote
	revA := e.head()
	e.createApplication(root, remote, "staging")
	e.createApplication(root, remote, "production")

	t.Run("positive path: synced by the controller, Progressing until verified, then Healthy", func(t *testing.T) {
		e.t = t
		e.positive(revA)
		if n := cp.ResidentServed(); n == 0 {
			t.Error("the plugin rendered in-process: the resident renderer answered no generate")
		}
	})
	if t.Failed() {
		return
	}
	t.Run("staging observed revision -> staging runtime evidence, by the notifier's resync", func(t *testing.T) {
		e.t = t
		e.stagingEvidence(api, revA)
	})
	if t.Failed() {
		return
	}
	t.Run("a commit outside the app leaves it Synced: no sync, no new Acceptance", func(t *testing.T) {
		e.t = t
		e.unrelatedCommits(revA)
	})
	if t.Failed() {
		return
	}
	t.Run("experiment 4: an unpinned image reaching Argo CD", func(t *testing.T) {
		e.t = t
		e.unpinned()
	})
	e.experiments(t)
}

// seedGit copies examples/gitops-env into a new repository on the Git server
// and returns its URL.
func (e *env) seedGit(root string) string {
	srv := testenv.StartGitServer(e.t, testenv.GitServerOptions{})
	remote, err := srv.CreateRepo(e.ctx, "platform/gitops-env.git")
	must(e.t, err)
	e.work = filepath.Join(e.t.TempDir(), "gitops-env")
	must(e.t, os.CopyFS(e.work, os.DirFS(filepath.Join(root, "examples", "gitops-env"))))
	testenv.RemoveRuntimeChecks(e.t, e.work) // no app serves and no Prometheus runs here
	testenv.RemoveTrust(e.t, e.work)         // made-up digests without evidence: e2e/supplychain's subject
	// Production's approvers sign with keys of the test.
	e.alice, e.bob = sshkey.New(e.t, "alice@example.com"), sshkey.New(e.t, "bob@example.com")
	must(e.t, os.WriteFile(filepath.Join(e.work, "allowed-signers"), []byte(sshkey.Signers(e.alice, e.bob)), 0o644))
	// The notifier signs the evidence it writes with a key the policy's
	// evidenceSigners lists.
	e.notifier = sshkey.NewNotifier(e.t, "dev", "staging", "production")
	must(e.t, os.MkdirAll(filepath.Join(e.work, filepath.Dir(sshkey.EvidenceSignersFile)), 0o755))
	must(e.t, os.WriteFile(filepath.Join(e.work, sshkey.EvidenceSignersFile), []byte(e.notifier.Line()), 0o644))
	pol, err := os.ReadFile(filepath.Join(e.work, promotion.PolicyFile))
	must(e.t, err)
	must(e.t, os.WriteFile(filepath.Join(e.work, promotion.PolicyFile), append(pol, sshkey.PolicyLine...), 0o644))
	e.git("init", "-q", "-b", "main")
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "examples/gitops-env")
	e.git("remote", "add", "origin", remote)
	e.git("push", "-q", "origin", "main")
	return remote
}

func (e *env) git(args ...string) string {
	e.t.Helper()
	return testenv.Git(e.t, e.ctx, e.gitEnv, e.work, args...)
}

func (e *env) head() string { return e.git("rev-parse", "HEAD") }

// commitTag rewrites staging's image tag and pushes; it returns the commit.
func (e *env) commitTag(newTag, msg string) string {
	e.t.Helper()
	p := filepath.Join(e.work, filepath.FromSlash(stagingKz))
	b, err := os.ReadFile(p)
	must(e.t, err)
	lines := strings.Split(string(b), "\n")
	found := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "newTag:") {
			lines[i] = l[:strings.Index(l, "newTag:")] + "newTag: " + newTag
			found = true
		}
	}
	if !found {
		e.t.Fatalf("%s: no newTag line", stagingKz)
	}
	must(e.t, os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644))
	e.git("commit", "-q", "-am", msg)
	e.git("push", "-q", "origin", "main")
	return e.head()
}

// healthLua is argocd-cm's data from deploy/argocd/argocd-cm-health.yaml,
// the Lua health check of the Acceptance as shipped.
func healthLua(t *testing.T, root string) map[string]string {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "argocd", "argocd-cm-health.yaml"))
	must(t, err)
	var cm corev1.ConfigMap
	must(t, yaml.Unmarshal(b, &cm))
	if len(cm.Data) == 0 {
		t.Fatal("deploy/argocd/argocd-cm-health.yaml: no data")
	}
	return cm.Data
}

// createApplication creates examples/gitops-env/clusters/<environment>/checkout.yaml
// with the repository URL of the test's Git server, after the AppProject
// of the environment it names (project.yaml, the least-privilege layer
// the real application controller enforces), reading that server.
func (e *env) createApplication(root, remote, environment string) {
	pb, err := os.ReadFile(filepath.Join(root, "examples", "gitops-env", "clusters", environment, "project.yaml"))
	must(e.t, err)
	proj := &unstructured.Unstructured{}
	must(e.t, yaml.Unmarshal(pb, &proj.Object))
	if repos, _, _ := unstructured.NestedStringSlice(proj.Object, "spec", "sourceRepos"); len(repos) != 1 || repos[0] == "*" {
		e.t.Fatalf("examples/gitops-env/clusters/%s/project.yaml: sourceRepos %q, want the one repository", environment, repos)
	}
	must(e.t, unstructured.SetNestedStringSlice(proj.Object, []string{remote}, "spec", "sourceRepos"))
	proj.SetNamespace(e.argoNS)
	must(e.t, client.IgnoreAlreadyExists(e.c.Create(e.ctx, proj)))
	b, err := os.ReadFile(filepath.Join(root, "examples", "gitops-env", "clusters", environment, "checkout.yaml"))
	must(e.t, err)
	u := &unstructured.Unstructured{}
	must(e.t, yaml.Unmarshal(b, &u.Object))
	must(e.t, unstructured.SetNestedField(u.Object, remote, "spec", "source", "repoURL"))
	// The example must sync on its first try: its destination namespace
	// exists only because it says CreateNamespace=true (issue 16, break 2).
	opts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "syncPolicy", "syncOptions")
	if !slices.Contains(opts, "CreateNamespace=true") {
		e.t.Fatalf("arrow Application -> first sync: examples/gitops-env/clusters/%s/checkout.yaml has no CreateNamespace=true (syncOptions %q)", environment, opts)
	}
	if p, _, _ := unstructured.NestedString(u.Object, "spec", "project"); p != proj.GetName() {
		e.t.Fatalf("examples/gitops-env/clusters/%s/checkout.yaml: project %q, want its environment's %q", environment, p, proj.GetName())
	}
	u.SetNamespace(e.argoNS)
	must(e.t, e.c.Create(e.ctx, u))
}

// app is the Application as the API server serves it.
func (e *env) app() *unstructured.Unstructured {
	e.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1alpha1")
	u.SetKind("Application")
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.argoNS, Name: e.application}, u))
	return u
}

func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

// summary is the part of the Application's status a failure message shows.
func summary(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	return fmt.Sprintf("sync %s at %.12s, health %s (%s), operation %s: %s, conditions %v",
		str(u, "status", "sync", "status"), str(u, "status", "sync", "revision"),
		str(u, "status", "health", "status"), str(u, "status", "health", "message"),
		str(u, "status", "operationState", "phase"), str(u, "status", "operationState", "message"), conds)
}

// waitApp polls the Application until ok holds; arrow names what failed.
func (e *env) waitApp(arrow string, d time.Duration, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	e.t.Helper()
	deadline := time.Now().Add(d)
	var u *unstructured.Unstructured
	for {
		u = e.app()
		if ok(u) {
			return u
		}
		if time.Now().After(deadline) || e.ctx.Err() != nil {
			e.t.Fatalf("arrow %q: not within %s; Application: %s", arrow, d, summary(u))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// refresh asks the application controller for a refresh ("normal" or
// "hard"), as argocd-server does for a user: a merge patch of the
// annotation (no resourceVersion: the controller writes the Application's
// status all the time, an update would conflict).
func (e *env) refresh(kind string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":%q}}}`, kind)
	must(e.t, e.c.Patch(e.ctx, e.app(), client.RawPatch(types.MergePatchType, []byte(patch))))
}

// resourceHealth is the health the controller computed for one managed
// resource (kind, name) in status.resources.
//
// Today every resource of the example (the Acceptance too) is named checkout.
func resourceHealth(u *unstructured.Unstructured, kind, name string) string { //nolint:unparam // see above
	rs, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, r := range rs {
		m, _ := r.(map[string]any)
		if m["kind"] == kind && m["name"] == name {
			h, _, _ := unstructured.NestedString(m, "health", "status")
			return h
		}
	}
	return ""
}

func (e *env) positive(revA string) {
	// Arrow: desired commit -> observed revision, from the controller's own status.
	u := e.waitApp("commit -> synced revision", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "revision") == revA && str(u, "status", "sync", "status") == "Synced" &&
			str(u, "status", "operationState", "phase") == "Succeeded"
	})
	if got := str(u, "status", "operationState", "syncResult", "revision"); got != revA {
		e.t.Fatalf("arrow commit -> sync result: revision %s, want %s", got, revA)
	}
	// Arrow: rendered output -> live objects, in the destination namespace
	// (created by the sync: CreateNamespace=true).
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Name: appNS}, &corev1.Namespace{}))
	d := &appsv1.Deployment{}
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: appNS, Name: "checkout"}, d))
	if img := d.Spec.Template.Spec.Containers[0].Image; img != image+":1.4.2@"+digestA {
		e.t.Fatalf("arrow render -> live Deployment: image %s", img)
	}
	acc := health.NewAcceptance()
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: appNS, Name: accName}, acc))
	if acc.GetLabels()["app.kubernetes.io/instance"] != appName {
		e.t.Fatalf("arrow render -> live Acceptance: not tracked by Argo CD (labels %v)", acc.GetLabels())
	}
	// Health: the rollout completes and every built-in resource turns
	// Healthy, but no verifier runs yet: the Acceptance's Lua health alone
	// must hold the app Progressing.
	e.rollout(d, "h1", digestA)
	e.waitApp("rollout done, Acceptance unverified -> app Progressing", time.Minute, func(u *unstructured.Unstructured) bool {
		return resourceHealth(u, "Deployment", "checkout") == "Healthy" && resourceHealth(u, "Ingress", "checkout") == "Healthy" &&
			resourceHealth(u, "Service", "checkout") == "Healthy"
	})
	time.Sleep(2 * time.Second) // a few more health assessments
	u = e.app()
	if a, h := resourceHealth(u, "Acceptance", accName), str(u, "status", "health", "status"); a != "Progressing" || h != "Progressing" {
		e.t.Fatalf("arrow unverified Acceptance -> app Progressing: Acceptance %q, app %q (%s)", a, h, summary(u))
	}
	e.t.Logf("synced %s; rollout done, app Progressing until the Acceptance is verified", revA[:12])

	e.verify()
	e.waitHealthy("Pods run A -> Acceptance verified -> app Healthy")
}

// unrelatedCommits is issue 16's break 3: two commits that change only
// production's overlay and the README (nothing staging renders). The
// controller compares staging at each new commit and finds it Synced: no
// sync operation, no history entry, the Acceptance unchanged (its
// generation and content: the render carries no revision), the app Healthy.
func (e *env) unrelatedCommits(revA string) {
	e.t.Helper()
	before := e.app()
	hist, _, _ := unstructured.NestedSlice(before.Object, "status", "history")
	acc := health.NewAcceptance()
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: appNS, Name: accName}, acc))
	gen := acc.GetGeneration()
	for i, f := range []string{"apps/checkout/overlays/production/kustomization.yaml", "README.md"} {
		p := filepath.Join(e.work, filepath.FromSlash(f))
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			must(e.t, err)
		}
		must(e.t, os.WriteFile(p, append(b, []byte(fmt.Sprintf("\n# unrelated to staging (%d)\n", i))...), 0o644))
		e.git("add", "-A")
		e.git("commit", "-q", "-m", "touch "+f)
		e.git("push", "-q", "origin", "main")
		rev := e.head()
		e.refresh("normal")
		u := e.waitApp("unrelated commit -> compared at it", time.Minute, func(u *unstructured.Unstructured) bool {
			return str(u, "status", "sync", "revision") == rev && str(u, "status", "reconciledAt") != ""
		})
		if st := str(u, "status", "sync", "status"); st != "Synced" {
			e.t.Fatalf("arrow unrelated commit -> app Synced: %s at %s (%s)", st, rev[:12], summary(u))
		}
	}
	time.Sleep(3 * time.Second) // an auto-sync, if one were started, would show by now
	u := e.app()
	if got := str(u, "status", "operationState", "syncResult", "revision"); got != revA {
		e.t.Fatalf("arrow unrelated commit -> no sync: the last sync is at %s, want %s (%s)", got, revA[:12], summary(u))
	}
	if h, _, _ := unstructured.NestedSlice(u.Object, "status", "history"); len(h) != len(hist) {
		e.t.Fatalf("arrow unrelated commit -> no sync: history has %d entries, had %d", len(h), len(hist))
	}
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: appNS, Name: accName}, acc))
	if acc.GetGeneration() != gen {
		e.t.Fatalf("arrow unrelated commit -> Acceptance unchanged: generation %d, was %d", acc.GetGeneration(), gen)
	}
	if h := str(u, "status", "health", "status"); h != "Healthy" {
		e.t.Fatalf("arrow unrelated commit -> app stays Healthy: %s", h)
	}
	e.t.Logf("two unrelated commits: staging compared at each, stayed Synced and Healthy, no sync, Acceptance generation %d", gen)
}

// waitHealthy waits for the app Healthy and checks the Acceptance was
// verified by the verifier (not merely absent from the health).
func (e *env) waitHealthy(arrow string) {
	e.t.Helper()
	u := e.waitApp(arrow, 2*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "health", "status") == "Healthy"
	})
	if h := resourceHealth(u, "Acceptance", accName); h != "Healthy" {
		e.t.Fatalf("arrow %s: Acceptance resource health %q, want Healthy", arrow, h)
	}
	acc := health.NewAcceptance()
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: accName}, acc))
	st, err := health.ReadStatus(acc)
	must(e.t, err)
	if st.VerifiedAt == nil || st.ObservedGeneration != acc.GetGeneration() {
		e.t.Fatalf("arrow %s: Acceptance not verified at generation %d: %+v", arrow, acc.GetGeneration(), st)
	}
}

// rollout waits until the real deployment and replicaset controllers
// (kube-controller-manager) rolled out d's current template, while the
// PLAYED kubelet (testenv.StartKubelet: no container runtime here) binds
// the Pods to node-1 and runs them with the imageID of their pinned image
// (docker-pullable://repo@digest); it then plays the ingress controller (an
// address in the Ingress status): no ingress controller runs. The kubelet
// runs only during rollout: in between, the Pods of a new template stay
// Pending and the old ones keep running. hash is unused: the deployment
// controller computes the pod-template-hash.
func (e *env) rollout(d *appsv1.Deployment, _ /* hash */, digest string) {
	e.t.Helper()
	kubelet := testenv.StartKubelet(e.ctx, e.t, e.c, testenv.KubeletOptions{Namespaces: []string{d.Namespace}, Node: "node-1"})
	_, pods, err := testenv.WaitRolledOut(e.ctx, e.c, d.Namespace, d.Name, 2*time.Minute)
	kubelet.Stop()
	if err != nil {
		e.t.Fatalf("arrow live Deployment -> Pods rolled out: %v", err)
	}
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			if !strings.HasSuffix(s.ImageID, "@"+digest) {
				e.t.Fatalf("arrow rollout -> Pods run %s: Pod %s container %s imageID %s", digest, p.Name, s.Name, s.ImageID)
			}
		}
	}
	ing := &networkingv1.Ingress{}
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: d.Namespace, Name: "checkout"}, ing))
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
	must(e.t, e.c.Status().Update(e.ctx, ing))
}

func (e *env) unpinned() {
	liveUID := func() (string, string) {
		d := &appsv1.Deployment{}
		must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: appNS, Name: "checkout"}, d))
		acc := health.NewAcceptance()
		must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: appNS, Name: accName}, acc))
		return string(d.UID), string(acc.GetUID())
	}
	depUID, accUID := liveUID()
	revB := e.commitTag(`"1.4.2"`, "staging: checkout by tag only (unpinned)")
	t0 := time.Now()
	e.refresh("normal")
	comparisonError := func(u *unstructured.Unstructured) string {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "ComparisonError" {
				s, _ := m["message"].(string)
				return s
			}
		}
		return ""
	}
	u := e.waitApp("unpinned commit -> ComparisonError naming the image", time.Minute, func(u *unstructured.Unstructured) bool {
		msg := comparisonError(u)
		return strings.Contains(msg, "unpinned-image") && strings.Contains(msg, image)
	})
	e.t.Logf("ComparisonError %s after the refresh of %.12s: %s", time.Since(t0).Round(100*time.Millisecond), revB, comparisonError(u))
	// Nothing pruned or applied: the same live objects, the last sync's revision.
	if d, a := liveUID(); d != depUID || a != accUID {
		e.t.Fatalf("arrow refused render -> no prune: live objects replaced (Deployment %s -> %s, Acceptance %s -> %s)", depUID, d, accUID, a)
	}
	if got := str(u, "status", "operationState", "syncResult", "revision"); got == revB {
		e.t.Fatalf("arrow refused render -> no sync: synced %s", revB)
	}
	// The condition can land one status write before the sync status.
	e.waitApp("refused render -> sync status Unknown", 30*time.Second, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Unknown"
	})

	// The repo-server's error cache: refresh the same commit until the
	// error is served from the cache (ARGOCD_PAUSE_GEN_AFTER_FAILED_ATTEMPTS,
	// default 3), then check a hard refresh calls the plugin again.
	cached := false
	for i := 0; i < 6 && !cached; i++ {
		e.refresh("normal")
		time.Sleep(time.Second)
		u = e.waitApp("refresh of the refused commit -> ComparisonError", time.Minute, func(u *unstructured.Unstructured) bool {
			_, pending := u.GetAnnotations()["argocd.argoproj.io/refresh"]
			return !pending && comparisonError(u) != ""
		})
		cached = strings.Contains(comparisonError(u), "Manifest generation error (cached)")
		e.t.Logf("refresh %d of %.12s: cached=%t", i+1, revB, cached)
	}
	if !cached {
		e.t.Fatalf("repo-server error cache: the refused commit's error never came from the cache: %s", comparisonError(u))
	}
	e.refresh("hard")
	e.waitApp("hard refresh -> the plugin runs again (error not cached)", time.Minute, func(u *unstructured.Unstructured) bool {
		msg := comparisonError(u)
		return msg != "" && !strings.Contains(msg, "(cached)")
	})

	// Recovery: a pinned commit lands; a normal refresh (a new commit is
	// rendered afresh) syncs it.
	revC := e.commitTag(`"1.4.3@`+digestC+`"`, "staging: checkout 1.4.3 pinned")
	e.refresh("normal")
	u = e.waitApp("pinned commit -> synced, ComparisonError gone", 2*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "revision") == revC && str(u, "status", "sync", "status") == "Synced" &&
			str(u, "status", "operationState", "syncResult", "revision") == revC &&
			str(u, "status", "operationState", "phase") == "Succeeded" && comparisonError(u) == ""
	})
	d := &appsv1.Deployment{}
	must(e.t, e.c.Get(e.ctx, client.ObjectKey{Namespace: appNS, Name: "checkout"}, d))
	if img := d.Spec.Template.Spec.Containers[0].Image; img != image+":1.4.3@"+digestC {
		e.t.Fatalf("arrow pinned commit -> live Deployment: image %s", img)
	}
	if string(d.UID) != depUID {
		e.t.Fatalf("arrow pinned commit -> Deployment updated in place: UID %s -> %s", depUID, d.UID)
	}
	// Pods still run A: the new Acceptance keeps the app Progressing.
	if h := str(u, "status", "health", "status"); h != "Progressing" {
		e.t.Fatalf("arrow new digest, old Pods -> app health %s, want Progressing", h)
	}
	e.rollout(d, "h2", digestC)
	e.waitHealthy("Pods run the pinned digest -> app Healthy")
	e.t.Logf("recovered at %.12s: %s", revC, summary(e.app()))
}
