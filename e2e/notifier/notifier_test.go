//go:build e2e

// Package notifier drives the notifier with the real senders: Flux's
// notification-controller (generic-hmac Provider) and Argo CD's
// notifications controller (the shipped argocd-notifications-cm template),
// against Acceptances in a real kube-apiserver, committing the evidence to
// a real Git server over smart HTTP. Build tag e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/notifier/
package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
)

var (
	digest = "sha256:" + strings.Repeat("ab", 32)
	hashA  = "sha256:" + strings.Repeat("1", 64)
	hashB  = "sha256:" + strings.Repeat("2", 64)
	t0     = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// env is the GitOps repository on the harness's Git server with a
// RECONCILING record for app in production, a notifier committing to it,
// and the Acceptance of the app, verified, in the API server.
type env struct {
	api      *testenv.APIServer
	remote   string
	desired  string
	notifier *httptest.Server
	app      string
	// commits is how many commits main has before the evidence commit.
	commits int
	// policyRev is the commit of the policy, before the desired one ("":
	// no policy).
	policyRev string
	// haltReason is what a HALTED record's reason contains.
	haltReason string
	// key signs the evidence the notifier writes (its evidenceSigners
	// line lists production).
	key sshkey.Notifier
}

// setup starts the Git server with the seed repository and the notifier.
func setup(t *testing.T, ctx context.Context, api *testenv.APIServer, app string, cfg notifier.Config) *env {
	t.Helper()
	return setupWithPolicy(t, ctx, api, app, cfg, "")
}

// setupWithPolicy is setup where, when policy is set, the first commit
// of main is throughline-policy.yaml with that content, before the desired
// commit (a controller stuck there observes an ancestor of the desired one),
// and the notifier judges the controller objects by its registry.
func setupWithPolicy(t *testing.T, ctx context.Context, api *testenv.APIServer, app string, cfg notifier.Config, policy string) *env {
	t.Helper()
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: "s3cr3t"})
	remote, err := gs.CreateRepo(ctx, "org/gitops.git")
	must(t, err)
	seed := t.TempDir()
	git(t, seed, "clone", "-q", remote, "r")
	seed = filepath.Join(seed, "r")
	e := &env{api: api, remote: remote, app: app, commits: 2, haltReason: "wrong revision", key: sshkey.NewNotifier(t, "production")}
	if policy != "" {
		must(t, os.WriteFile(filepath.Join(seed, promotion.PolicyFile), []byte(policy), 0o644))
		git(t, seed, "add", ".")
		git(t, seed, "commit", "-q", "-m", "policy")
		e.policyRev, e.commits = git(t, seed, "rev-parse", "HEAD"), 3
	}
	overlay := filepath.Join(seed, "apps", app, "overlays", "production")
	must(t, os.MkdirAll(overlay, 0o755))
	must(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("images: [{name: x, digest: \""+digest+"\"}]\n"), 0o644))
	if policy != "" {
		must(t, os.WriteFile(filepath.Join(seed, promotion.PolicyFile), []byte(policy), 0o644))
	}
	git(t, seed, "add", ".")
	git(t, seed, "commit", "-q", "-m", "promote "+app)
	desired := git(t, seed, "rev-parse", "HEAD")
	tg := promotion.Target{Environment: "production", Path: "apps/" + app + "/overlays/production", Cluster: "prod", RenderedHash: hashA, BaseRenderedHash: hashB, Renderer: "v0.1.0"}
	rec, err := promotion.NewCandidate(app, 1, promotion.Artifact{Image: "ghcr.io/x/" + app + ":1@" + digest, Digest: digest, SourceCommit: strings.Repeat("c", 40)}, tg, t0, "ci")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("d", 40), ObservedRevision: strings.Repeat("d", 40), RenderedHash: hashB, RuntimeEvidence: "evidence/staging/x.json"}, t0, "notifier"))
	must(t, rec.Approve("alice", rec.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0))
	must(t, rec.Reconcile(desired, t0, "ci"))
	y, err := rec.Marshal()
	must(t, err)
	p := filepath.Join(seed, promotion.RecordPath(app, "production"))
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, y, 0o644))
	git(t, seed, "add", ".")
	git(t, seed, "commit", "-q", "-m", "records")
	git(t, seed, "push", "-q", "origin", "main")

	// The Acceptance, as the CMP renders it and the verifier marks it.
	c := api.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	acc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "throughline.dev/v1alpha1", "kind": "Acceptance",
		"metadata": map[string]any{"name": app, "namespace": "shop", "labels": map[string]any{
			"app.kubernetes.io/managed-by": "throughline", "throughline.dev/app": app, "throughline.dev/environment": "production"}},
		"spec": map[string]any{"app": app, "environment": "production", "renderedHash": hashA, "objectCount": int64(2),
			"workloads": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": app,
				"containers": []any{map[string]any{"name": "app", "path": "spec.template.spec.containers[0]", "image": "ghcr.io/x/" + app + ":1@" + digest, "digest": digest}}}}},
	}}
	must(t, c.Create(ctx, acc))
	now := time.Now().UTC().Format(time.RFC3339)
	must(t, unstructured.SetNestedField(acc.Object, map[string]any{
		"observedGeneration": acc.GetGeneration(), "renderedHash": hashA, "verifiedAt": now,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Verified", "message": "verified", "lastTransitionTime": now, "observedGeneration": acc.GetGeneration()}},
		"workloads": []any{map[string]any{"kind": "Deployment", "namespace": "shop", "name": app, "outcome": "Verified", "pods": int64(1),
			"containers": []any{map[string]any{"name": "app", "digest": digest, "outcome": "Verified",
				"observed": []any{map[string]any{"imageID": "ghcr.io/x/" + app + "@" + digest, "outcome": "Verified", "match": "Exact", "pods": int64(1), "pod": app + "-abc"}}}}}},
	}, "status"))
	must(t, c.Status().Update(ctx, acc))

	// The notifier, on its own clone.
	work := filepath.Join(t.TempDir(), "w")
	git(t, filepath.Dir(work), "clone", "-q", remote, work)
	repo, err := gitrepo.Open(ctx, work)
	must(t, err)
	dyn, err := dynamic.NewForConfig(api.Config)
	must(t, err)
	live := &notifier.KubeAcceptances{Client: dyn}
	if policy != "" {
		live.Registry = notifier.BaseRegistry(&gitops.Repo{Repo: repo, Base: "main"})
	}
	proc := &notifier.Processor{Git: &evidence.GitSink{Repo: repo, Branch: "main", Signer: e.key}, Live: live}
	h, err := notifier.New(cfg, proc, nil)
	must(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e.desired, e.notifier = desired, srv
	return e
}

// accepted waits for the evidence commit on the Git server and checks it.
func (e *env) accepted(t *testing.T, source string) {
	t.Helper()
	e.decided(t, source, promotion.Accepted, e.desired)
}

// decided waits for the evidence commit that moves the record to want,
// observing observed, and checks it.
func (e *env) decided(t *testing.T, source string, want promotion.State, observed string) *evidence.Record {
	t.Helper()
	dir := t.TempDir()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out := git(t, dir, "ls-remote", e.remote, "refs/heads/main")
		tip := strings.Fields(out)[0]
		clone := filepath.Join(t.TempDir(), "c")
		git(t, filepath.Dir(clone), "clone", "-q", e.remote, clone)
		raw := git(t, clone, "show", tip+":"+promotion.RecordPath(e.app, "production"))
		rec, err := promotion.Parse("record", []byte(raw))
		must(t, err)
		if rec.State == want {
			evPath := evidence.Path("production", e.app, rec.PromotionID)
			// Signed by the notifier's key, as the gates read it
			// (ledger.ReadEvidence: evidence.Open with evidenceSigners).
			keys, err := evidence.ParseKeys("evidence-signers", []byte(e.key.Line()))
			must(t, err)
			show := func(file string) []byte {
				out, err := exec.Command("git", "-C", clone, "show", tip+":"+file).Output()
				must(t, err)
				return out
			}
			ev, err := evidence.Open(evPath, "production", show(evPath), show(evidence.SignaturePath(evPath)), keys)
			must(t, err)
			if ev.Decision != want || ev.ObservedRevision != observed || ev.ReportedBy.Source != source {
				t.Fatalf("evidence %+v", ev)
			}
			if want == promotion.Accepted && (len(ev.Pods) != 1 || ev.Acceptance != "shop/"+e.app) {
				t.Fatalf("evidence %+v", ev)
			}
			if want == promotion.Halted && (rec.Accepted != nil || !strings.Contains(rec.Reason, e.haltReason)) {
				t.Fatalf("HALTED record: reason %q, accepted %+v", rec.Reason, rec.Accepted)
			}
			t.Logf("evidence commit %s: %s", tip[:12], git(t, clone, "log", "-1", "--format=%s", tip))
			if n := git(t, clone, "rev-list", "--count", tip); n != strconv.Itoa(e.commits+1) {
				t.Fatalf("%s commits on main, want %d ([policy,] overlay, records, one evidence commit)", n, e.commits+1)
			}
			return ev
		}
		if rec.State != promotion.Reconciling {
			t.Fatalf("record %s: %s", rec.State, rec.Reason)
		}
		if time.Now().After(deadline) {
			t.Fatal("no evidence commit within 90s")
		}
		time.Sleep(time.Second)
	}
}

func TestFluxNotificationControllerToEvidence(t *testing.T) {
	fluxToEvidence(t, observedDesired)
}

// The Kustomization applied the records commit on top of the desired one
// (records live on the watched branch): a later commit rendering the same
// objects, so ACCEPTED, and the evidence says why.
func TestFluxLaterRevisionAccepted(t *testing.T) {
	fluxToEvidence(t, observedLater)
}

// The Kustomization applied a commit that does not descend from the desired
// one (another branch): HALTED "wrong revision", never ACCEPTED.
func TestFluxWrongRevisionHalts(t *testing.T) {
	fluxToEvidence(t, observedUnrelated)
}

// The Kustomization still applies a commit before the desired one long
// after production's reconcileDeadline (10m; the record became RECONCILING
// at t0): HALTED, naming the revision it is stuck on.
func TestFluxStuckPastReconcileDeadlineHalts(t *testing.T) {
	fluxToEvidence(t, observedStuck)
}

type observedCase int

const (
	observedDesired      observedCase = iota // the desired commit itself
	observedLater                            // a later commit of the branch
	observedUnrelated                        // a commit on another branch
	observedStuck                            // an earlier commit, past the deadline
	stagingKustomization                     // the desired commit, applied by a Kustomization of staging's path
)

// deadlinePolicy is the registry of TestFluxStuckPastReconcileDeadlineHalts:
// production's path and namespace, and its reconcileDeadline.
const deadlinePolicy = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  production:
    cluster: prod
    paths: ["apps/*/overlays/production"]
    namespaces: ["shop"]
    reconcileDeadline: 10m
`

// registryPolicy is the environment registry of TestFluxStagingKustomizationRefused.
const registryPolicy = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  staging:
    paths: ["apps/*/overlays/staging"]
    namespaces: ["*-staging"]
  production:
    paths: ["apps/*/overlays/production"]
    namespaces: ["shop"]
`

// Issue 14: with an environment registry, a Kustomization applying
// staging's path under production's Alert is refused (409 unbound) and
// nothing is written, though the Acceptance in its namespace is verified.
func TestFluxStagingKustomizationRefused(t *testing.T) {
	fluxToEvidence(t, stagingKustomization)
}

// refused waits until the notifier has refused a delivery from source for
// reason (its metrics), then checks that main holds no evidence commit and
// the record is still RECONCILING.
func (e *env) refused(t *testing.T, source, reason string) {
	t.Helper()
	want := fmt.Sprintf(`throughline_notifier_deliveries_refused_total{reason=%q,source=%q}`, reason, source)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(e.notifier.URL + "/metrics")
		must(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		must(t, err)
		if strings.Contains(string(body), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 90s", want)
		}
		time.Sleep(time.Second)
	}
	clone := filepath.Join(t.TempDir(), "c")
	git(t, filepath.Dir(clone), "clone", "-q", e.remote, clone)
	rec, err := promotion.Parse("record", []byte(git(t, clone, "show", "HEAD:"+promotion.RecordPath(e.app, "production"))))
	must(t, err)
	if n := git(t, clone, "rev-list", "--count", "HEAD"); n != strconv.Itoa(e.commits) || rec.State != promotion.Reconciling {
		t.Fatalf("after a refused delivery: %s commits on main (want %d), record %s", n, e.commits, rec.State)
	}
}

func fluxToEvidence(t *testing.T, which observedCase) {
	testenv.RequireNotificationController(t)
	root := repoRoot()
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{testenv.FluxCRDs(t), filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")}})
	nc := testenv.StartNotificationController(t, api)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	key := []byte("hmac-key-0123456789")
	policy := ""
	switch which {
	case observedStuck:
		policy = deadlinePolicy
	case stagingKustomization:
		policy = registryPolicy
	}
	e := setupWithPolicy(t, ctx, api, "checkout", notifier.Config{FluxKey: key, Rate: -1}, policy)
	c := api.Client
	const ns = "flux-system"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	// The shipped Provider, Alert and Secret, pointed at this notifier.
	for _, f := range []string{"notifier-secret.yaml", "notifier-provider.yaml", "notifier-alert.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "deploy", "flux", f))
		must(t, err)
		u := &unstructured.Unstructured{}
		must(t, sigyaml.Unmarshal(raw, &u.Object))
		switch u.GetKind() {
		case "Secret":
			must(t, unstructured.SetNestedField(u.Object, string(key), "stringData", "token"))
		case "Provider":
			must(t, unstructured.SetNestedField(u.Object, e.notifier.URL+"/v1/flux", "spec", "address"))
		}
		must(t, c.Create(ctx, u))
	}
	ksPath := "./apps/checkout/overlays/production"
	if which == stagingKustomization {
		ksPath = "./apps/checkout/overlays/staging" // staging's path under production's Alert
	}
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "checkout-production", "namespace": ns},
		// targetNamespace binds the namespace the notifier reads the Acceptance in.
		"spec": map[string]any{"interval": "5m", "path": ksPath, "prune": true, "wait": true,
			"targetNamespace": "shop", "sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops-env"}},
	}}
	must(t, c.Create(ctx, ks))
	observed := e.desired
	switch which {
	case observedLater:
		observed = strings.Fields(git(t, t.TempDir(), "ls-remote", e.remote, "refs/heads/main"))[0]
	case observedUnrelated:
		side := filepath.Join(t.TempDir(), "side")
		git(t, filepath.Dir(side), "clone", "-q", e.remote, side)
		git(t, side, "checkout", "-q", "--orphan", "side")
		must(t, os.WriteFile(filepath.Join(side, "README.md"), []byte("another line of history\n"), 0o644))
		git(t, side, "add", "README.md")
		git(t, side, "commit", "-q", "-m", "unrelated")
		git(t, side, "push", "-q", "origin", "side")
		observed = git(t, side, "rev-parse", "HEAD")
	case observedStuck:
		observed = e.policyRev
		e.haltReason = "reconcileDeadline 10m0s passed: Kustomization/flux-system/checkout-production still observes " +
			observed + ", desired " + e.desired
	}
	revision := "main@sha1:" + observed
	must(t, unstructured.SetNestedField(ks.Object, revision, "status", "lastAppliedRevision"))
	must(t, c.Status().Update(ctx, ks))
	rec, err := events.NewRecorder(testr.New(t), nc.EventsURL, "kustomize-controller", events.WithScheme(api.Scheme))
	must(t, err)
	// Post until the controller's cache has the Alert (each message differs
	// so that its duplicate filter keeps none back).
	done := make(chan struct{})
	go func() {
		for attempt := 1; ; attempt++ {
			rec.AnnotatedEventf(ks, nil, map[string]string{"kustomize.toolkit.fluxcd.io/revision": revision},
				corev1.EventTypeNormal, "ReconciliationSucceeded", "", "Reconciliation finished, attempt %d", attempt)
			select {
			case <-done:
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	defer close(done)
	switch which {
	case stagingKustomization:
		e.refused(t, "flux", "unbound")
	case observedUnrelated, observedStuck:
		e.decided(t, "flux", promotion.Halted, observed)
	case observedLater:
		ev := e.decided(t, "flux", promotion.Accepted, observed)
		if !strings.Contains(ev.Reason, "later than the desired "+e.desired) || !strings.Contains(ev.Reason, hashA) {
			t.Fatalf("evidence reason %q does not say why the later commit counts", ev.Reason)
		}
	default:
		e.accepted(t, "flux")
	}
}

func TestArgoCDNotificationsToEvidence(t *testing.T) {
	testenv.RequireArgoCDNotifications(t)
	root := repoRoot()
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	token := "s3cr3t-t0ken"
	e := setup(t, ctx, api, "checkout", notifier.Config{ArgoCDToken: []byte(token), Rate: -1})
	c := api.Client
	const ns = "argocd"
	startArgoCDNotifications(ctx, t, api, root, ns, token, e.notifier.URL)
	source := map[string]any{"repoURL": e.remote, "path": "apps/checkout/overlays/production", "targetRevision": "main"}
	destination := map[string]any{"server": "https://kubernetes.default.svc", "namespace": "shop"}
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{
			"name": "checkout", "namespace": ns,
			"labels":      map[string]any{"throughline.dev/environment": "production"},
			"annotations": map[string]any{"notifications.argoproj.io/subscribe.on-deployed.throughline": ""},
		},
		"spec": map[string]any{"project": "default", "source": source, "destination": destination},
	}}))
	// Play argocd-application-controller: Synced/Healthy at the desired commit.
	time.Sleep(3 * time.Second)
	ts := time.Now().UTC().Format(time.RFC3339)
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"sync":         map[string]any{"status": "Synced", "revision": e.desired, "comparedTo": map[string]any{"source": source, "destination": destination}},
		"health":       map[string]any{"status": "Healthy"},
		"reconciledAt": ts,
		"operationState": map[string]any{
			"operation": map[string]any{"sync": map[string]any{"revision": e.desired}},
			"phase":     "Succeeded", "message": "successfully synced", "startedAt": ts, "finishedAt": ts,
			"syncResult": map[string]any{"revision": e.desired, "source": source},
		},
	}})
	must(t, err)
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("argoproj.io/v1alpha1")
	obj.SetKind("Application")
	obj.SetNamespace(ns)
	obj.SetName("checkout")
	must(t, c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
	e.accepted(t, "argocd")
}
