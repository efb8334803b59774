//go:build e2e

package notifier

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
)

// service starts the notifier as serve does from the release image
// (notifier.Start: the receivers and the resync on one Processor) on an
// in-process clone of e's repository, the token given apart from the URL
// (serve --notifier-git-url --notifier-git-token-file). The resync loop is
// not started: the test runs its passes.
func (e *env) service(t *testing.T, ctx context.Context, cfg notifier.Config) *notifier.Service {
	t.Helper()
	u, err := url.Parse(e.remote)
	must(t, err)
	password, _ := u.User.Password()
	creds := gitrepo.Credentials{Username: u.User.Username(), Token: []byte(password)}
	u.User = nil
	repo, err := gitops.Clone(ctx, gitrepo.CloneOptions{URL: u.String(), Dir: filepath.Join(t.TempDir(), "svc"), Credentials: creds})
	must(t, err)
	keyFile := filepath.Join(t.TempDir(), "evidence-key") // as serve reads it from its Secret
	must(t, os.WriteFile(keyFile, e.key.PrivatePEM(t), 0o600))
	svc, err := notifier.Start(ctx, notifier.ServiceConfig{Handler: cfg, Addr: "127.0.0.1:0", Repo: repo, Kube: e.api.Config,
		ResyncInterval: time.Second, OnResync: func(r notifier.Resynced) { t.Logf("resync: %+v", r) }, EvidenceKeyFile: keyFile})
	must(t, err)
	if svc.SigningKey() != ssh.FingerprintSHA256(e.key.PublicKey()) {
		t.Fatalf("the service signs with %q, want the key of its file", svc.SigningKey())
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	return svc
}

// mainCommits is how many commits main has on the Git server.
func (e *env) mainCommits(t *testing.T) int {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "c")
	git(t, filepath.Dir(clone), "clone", "-q", e.remote, clone)
	n, err := strconv.Atoi(git(t, clone, "rev-list", "--count", "HEAD"))
	must(t, err)
	return n
}

// playArgoCDController plays argocd-application-controller: the
// Application checkout in ns synced rev (operation Succeeded) and is
// Healthy. A merge patch on the main resource: the CRD has no status
// subresource; reconciledAt >= finishedAt, or the notifications
// controller skips the Application.
func playArgoCDController(t *testing.T, ctx context.Context, c client.Client, ns, rev string, source, destination map[string]any) {
	t.Helper()
	ts := time.Now().UTC().Format(time.RFC3339)
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"sync":         map[string]any{"status": "Synced", "revision": rev, "comparedTo": map[string]any{"source": source, "destination": destination}},
		"health":       map[string]any{"status": "Healthy"},
		"reconciledAt": ts,
		"operationState": map[string]any{
			"operation": map[string]any{"sync": map[string]any{"revision": rev}},
			"phase":     "Succeeded", "message": "successfully synced", "startedAt": ts, "finishedAt": ts,
			"syncResult": map[string]any{"revision": rev, "source": source},
		},
	}})
	must(t, err)
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("argoproj.io/v1alpha1")
	obj.SetKind("Application")
	obj.SetNamespace(ns)
	obj.SetName("checkout")
	must(t, c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
}

// argoApplication creates the Application checkout in ns, rendering
// production's overlay of e's repository into shop.
func (e *env) argoApplication(t *testing.T, ctx context.Context, ns string, annotations map[string]any) (source, destination map[string]any) {
	t.Helper()
	source = map[string]any{"repoURL": e.remote, "path": "apps/checkout/overlays/production", "targetRevision": "main"}
	destination = map[string]any{"server": "https://kubernetes.default.svc", "namespace": "shop"}
	must(t, e.api.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{
			"name": "checkout", "namespace": ns,
			"labels":      map[string]any{"throughline.dev/environment": "production"},
			"annotations": annotations,
		},
		"spec": map[string]any{"project": "default", "source": source, "destination": destination},
	}}))
	return source, destination
}

// only is the one resync result of a pass, failing on any other count.
func only(t *testing.T, rs []notifier.Resynced) notifier.Resynced {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("resync pass: %d results, want 1: %+v", len(rs), rs)
	}
	return rs[0]
}

// Issue 16, break 4, without any sender: a RECONCILING record, its
// controller's own status at the desired commit (played: Argo CD's
// application-controller, kustomize-controller) and the Acceptance
// verified, and NO delivery. One resync pass writes the evidence; a
// delivery for the same revision afterwards commits nothing (duplicate),
// and later passes see no RECONCILING record.
func TestResyncWithoutDelivery(t *testing.T) {
	for _, source := range []string{"argocd", "flux"} {
		t.Run(source, func(t *testing.T) { resyncWithoutDelivery(t, source) })
	}
}

func resyncWithoutDelivery(t *testing.T, source string) {
	root := repoRoot()
	crds := []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml"), testenv.ArgoCDCRDs(t), testenv.FluxCRDs(t)}
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: crds})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	token, key := "s3cr3t-t0ken", []byte("hmac-key-0123456789")
	cfg := notifier.Config{ArgoCDToken: []byte(token), FluxKey: key, Rate: -1}
	e := setup(t, ctx, api, "checkout", cfg)
	svc := e.service(t, ctx, cfg)
	rs := svc.Resyncer()
	c := api.Client

	// No controller object renders the record's path yet: nothing written.
	if r := only(t, rs.Once(ctx)); r.Outcome != notifier.ResyncNoController {
		t.Fatalf("before any controller object: %+v", r)
	}
	// deliver posts the late delivery to base: this notifier, or another
	// replica (setup's, on its own clone, which has seen nothing).
	var deliver func(base string) (int, string)
	switch source {
	case "argocd":
		const ns = "argocd"
		must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		src, dst := e.argoApplication(t, ctx, ns, nil)
		// Not synced yet: the resync waits.
		if r := only(t, rs.Once(ctx)); r.Outcome != notifier.ResyncWait || r.Object != "Application/argocd/checkout" {
			t.Fatalf("Application without status: %+v", r)
		}
		playArgoCDController(t, ctx, c, ns, e.desired, src, dst)
		deliver = func(base string) (int, string) {
			body, _ := json.Marshal(notifier.ArgoCDPayload{Trigger: "on-deployed", Application: "checkout", Namespace: ns,
				Environment: "production", Revision: e.desired, SyncStatus: "Synced", Phase: "Succeeded", Health: "Healthy"})
			return post(t, base+"/v1/argocd", body, "Authorization", "Bearer "+token)
		}
	case "flux":
		const ns = "flux-system"
		must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		ks := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": "checkout-production", "namespace": ns},
			"spec": map[string]any{"interval": "5m", "path": "./apps/checkout/overlays/production", "prune": true, "wait": true,
				"targetNamespace": "shop", "sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops-env"}},
		}}
		must(t, c.Create(ctx, ks))
		// Plays kustomize-controller: applied the desired commit, Ready.
		now := time.Now().UTC().Format(time.RFC3339)
		must(t, unstructured.SetNestedField(ks.Object, map[string]any{
			"observedGeneration": ks.GetGeneration(), "lastAppliedRevision": "main@sha1:" + e.desired, "lastAttemptedRevision": "main@sha1:" + e.desired,
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
				"message": "Applied revision: main@sha1:" + e.desired, "lastTransitionTime": now, "observedGeneration": ks.GetGeneration()}},
		}, "status"))
		must(t, c.Status().Update(ctx, ks))
		deliver = func(base string) (int, string) {
			body := []byte(`{"involvedObject":{"kind":"Kustomization","namespace":"flux-system","name":"checkout-production"},` +
				`"severity":"info","timestamp":"2026-11-29T10:00:00Z","message":"Reconciliation finished","reason":"ReconciliationSucceeded",` +
				`"metadata":{"revision":"main@sha1:` + e.desired + `","app":"checkout","environment":"production"},` +
				`"reportingController":"kustomize-controller"}`)
			return post(t, base+"/v1/flux", body, notifier.SignatureHeader, sign(key, body))
		}
	}
	r := only(t, rs.Once(ctx))
	if r.Outcome != notifier.ResyncAccepted || r.Revision != e.desired || r.Commit == "" {
		t.Fatalf("resync at the desired commit: %+v", r)
	}
	ev := e.decided(t, source, promotion.Accepted, e.desired)
	if ev.ReportedBy.Controller != notifier.ResyncController {
		t.Fatalf("evidence reportedBy %+v, want the resync", ev.ReportedBy)
	}
	// The late delivery, to this replica and to another one: a duplicate
	// (found in Git by the other), nothing committed.
	for _, base := range []string{"http://" + svc.Addr().String(), e.notifier.URL} {
		if status, result := deliver(base); status != http.StatusOK || result != "duplicate" {
			t.Fatalf("late delivery to %s: %d %s, want 200 duplicate", base, status, result)
		}
	}
	if rs := rs.Once(ctx); len(rs) != 0 {
		t.Fatalf("after the decision, a pass found %+v", rs)
	}
	if n := e.mainCommits(t); n != e.commits+1 {
		t.Fatalf("%d commits on main, want %d: one evidence commit", n, e.commits+1)
	}
}

// sign is the generic-hmac signature header of body.
func sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func post(t *testing.T, url string, body []byte, header, value string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(header, value)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var rep struct {
		Result string `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&rep)
	return resp.StatusCode, rep.Result
}

// Issue 16, break 4, with Argo CD's real notifications controller: the
// receiver is down (503) during the delivery window, the controller
// retries, gives up and never sends on-deployed again for that revision
// (oncePer). The notifier comes back: its resync writes the evidence
// anyway, exactly once.
func TestArgoCDLostDeliveryResynced(t *testing.T) {
	testenv.RequireArgoCDNotifications(t)
	root := repoRoot()
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{filepath.Join(root, "deploy", "crds", "throughline.dev_acceptances.yaml")}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	token := "s3cr3t-t0ken"
	cfg := notifier.Config{ArgoCDToken: []byte(token), Rate: -1}
	e := setup(t, ctx, api, "checkout", cfg)

	// The receiver's address: 503 while down (serve restarting, Git down),
	// else the notifier.
	var up atomic.Bool
	var refusedWhileDown, passed atomic.Int64
	svc := e.service(t, ctx, cfg)
	target, err := url.Parse("http://" + svc.Addr().String())
	must(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			refusedWhileDown.Add(1)
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		passed.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	c := api.Client
	const ns = "argocd"
	nc := startArgoCDNotifications(ctx, t, api, root, ns, token, front.URL)
	src, dst := e.argoApplication(t, ctx, ns, map[string]any{"notifications.argoproj.io/subscribe.on-deployed.throughline": ""})
	time.Sleep(3 * time.Second)
	playArgoCDController(t, ctx, c, ns, e.desired, src, dst)

	// The delivery window: the controller tries, is refused, gives up.
	failed := `argocd_notifications_deliveries_total{service="throughline",succeeded="false",trigger="on-deployed"}`
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, err := nc.Metric(ctx, failed)
		must(t, err)
		if v >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the notifications controller did not give up on on-deployed within 2m (%d requests refused)", refusedWhileDown.Load())
		}
		time.Sleep(time.Second)
	}
	t.Logf("the controller gave up after %d refused requests", refusedWhileDown.Load())
	if n := e.mainCommits(t); n != e.commits {
		t.Fatalf("%d commits on main while the receiver was down, want %d", n, e.commits)
	}

	// The receiver is back, but the controller never sends that revision
	// again ("already sent"): without the resync the record stays
	// RECONCILING for good (the break of issue 16).
	up.Store(true)
	time.Sleep(20 * time.Second)
	if n, p := e.mainCommits(t), passed.Load(); n != e.commits || p != 0 {
		t.Fatalf("after the receiver recovered, before any resync: %d commits on main (want %d), %d deliveries (want 0)", n, e.commits, p)
	}
	// The notifier's resync loop, no delivery, writes the evidence.
	loop, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Resyncer().Start(loop) }()
	e.accepted(t, "argocd")
	// Exactly once: more passes and the controller's own re-evaluations
	// add nothing.
	time.Sleep(5 * time.Second)
	stop()
	must(t, <-done)
	if n := e.mainCommits(t); n != e.commits+1 {
		t.Fatalf("%d commits on main, want %d: exactly one evidence commit", n, e.commits+1)
	}
	if v, err := nc.Metric(ctx, `argocd_notifications_deliveries_total{service="throughline",succeeded="true",trigger="on-deployed"}`); err != nil || v != 0 {
		t.Fatalf("on-deployed delivered %v times after the controller gave up (err %v): it never re-sends (oncePer)", v, err)
	}
}
