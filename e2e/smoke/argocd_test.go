//go:build e2e

package smoke

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/testenv"
)

type webhook struct {
	method, path, token string
	body                []byte
}

// TestArgoCDNotifications: Argo CD's real notifications controller, configured
// as a user would (argocd-notifications-cm with a webhook service, a template
// and the catalog's on-deployed trigger; a subscribed Application), sends one
// webhook when the Application becomes Synced/Healthy at a revision, none
// before, and none again for the same revision.
func TestArgoCDNotifications(t *testing.T) {
	testenv.RequireArgoCDNotifications(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	ctx := testContext(t, 3*time.Minute)
	c := api.Client
	const (
		ns    = "argocd"
		app   = "web-staging"
		token = "s3cr3t-t0ken"
		rev   = "0123456789abcdef0123456789abcdef01234567"
	)

	hits := make(chan webhook, 16)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- webhook{r.Method, r.URL.Path, r.Header.Get("X-Throughline-Token"), b}
	}))
	t.Cleanup(sink.Close)

	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-secret", Namespace: ns},
		StringData: map[string]string{"throughline-token": token},
	}))
	must(t, c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-cm", Namespace: ns},
		Data: map[string]string{
			"service.webhook.throughline": "url: " + sink.URL + "\nheaders:\n- name: X-Throughline-Token\n  value: $throughline-token\n",
			"template.app-deployed": `webhook:
  throughline:
    method: POST
    path: /v1/argocd
    body: |
      {"app":"{{.app.metadata.name}}","syncRevision":"{{.app.status.sync.revision}}","operationRevision":"{{.app.status.operationState.syncResult.revision}}","health":"{{.app.status.health.status}}"}
`,
			"trigger.on-deployed": `- when: app.status.operationState != nil and app.status.operationState.phase in ['Succeeded'] and app.status.health.status == 'Healthy'
  send: [app-deployed]
  oncePer: app.status.operationState?.syncResult?.revision
`,
		},
	}))

	// The controller installs the Application and AppProject CRDs.
	nctl := testenv.StartArgoCDNotifications(t, api, testenv.ArgoCDNotificationsOptions{Namespace: ns})

	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": ns},
		"spec": map[string]any{
			"sourceRepos":  []any{"*"},
			"destinations": []any{map[string]any{"server": "*", "namespace": "*"}},
		},
	}}))
	source := map[string]any{"repoURL": "http://127.0.0.1:1/gitops.git", "path": "envs/staging/web", "targetRevision": "main"}
	destination := map[string]any{"server": "https://kubernetes.default.svc", "namespace": "web"}
	must(t, c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{
			"name": app, "namespace": ns,
			"annotations": map[string]any{"notifications.argoproj.io/subscribe.on-deployed.throughline": ""},
		},
		"spec": map[string]any{"project": "default", "source": source, "destination": destination},
	}}))

	// Ready: the controller has evaluated on-deployed for the Application (false: not synced yet).
	evalFalse := `argocd_notifications_trigger_eval_total{name="on-deployed",triggered="false"}`
	waitFor(t, 60*time.Second, "first on-deployed evaluation", func() bool {
		v, err := nctl.Metric(ctx, evalFalse)
		return err == nil && v >= 1
	})
	select {
	case h := <-hits:
		t.Fatalf("webhook before any sync: %s %s %s", h.method, h.path, h.body)
	default:
	}

	// Play argocd-application-controller: Synced/Healthy at rev (merge patch
	// on the main resource; reconciledAt must not be before finishedAt).
	sync := func(at time.Time) {
		t.Helper()
		ts := at.UTC().Format(time.RFC3339)
		patch, err := json.Marshal(map[string]any{"status": map[string]any{
			"sync":         map[string]any{"status": "Synced", "revision": rev, "comparedTo": map[string]any{"source": source, "destination": destination}},
			"health":       map[string]any{"status": "Healthy"},
			"reconciledAt": ts,
			"operationState": map[string]any{
				"operation":  map[string]any{"sync": map[string]any{"revision": rev}},
				"phase":      "Succeeded",
				"message":    "successfully synced (all tasks run)",
				"startedAt":  ts,
				"finishedAt": ts,
				"syncResult": map[string]any{"revision": rev, "source": source},
			},
		}})
		must(t, err)
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("argoproj.io/v1alpha1")
		obj.SetKind("Application")
		obj.SetNamespace(ns)
		obj.SetName(app)
		must(t, c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
	}
	now := time.Now().Truncate(time.Second)
	sync(now)
	select {
	case h := <-hits:
		if h.method != http.MethodPost || h.path != "/v1/argocd" || h.token != token {
			t.Fatalf("webhook %s %s token %q, want POST /v1/argocd with the secret's token", h.method, h.path, h.token)
		}
		var body map[string]string
		if err := json.Unmarshal(h.body, &body); err != nil {
			t.Fatalf("webhook body is not JSON: %v: %s", err, h.body)
		}
		want := map[string]string{"app": app, "syncRevision": rev, "operationRevision": rev, "health": "Healthy"}
		for k, v := range want {
			if body[k] != v {
				t.Fatalf("webhook body[%s] = %q, want %q: %s", k, body[k], v, h.body)
			}
		}
		t.Logf("webhook: %s %s %s", h.method, h.path, h.body)
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook within 30s of Synced/Healthy")
	}

	// The controller records what it sent on the Application (the
	// notified.notifications.argoproj.io annotation) after sending: a
	// re-sync it sees before that record is sent again (argocd-notifications
	// delivers at least once; CI saw it once). The dedupe is judged once
	// the record is there.
	waitFor(t, 20*time.Second, "the controller's record of the notification", func() bool {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("argoproj.io/v1alpha1")
		obj.SetKind("Application")
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, obj); err != nil {
			return false
		}
		_, ok := obj.GetAnnotations()["notified.notifications.argoproj.io"]
		return ok
	})

	// The same revision again (a re-sync): evaluated, but not sent twice.
	evalTrue := `argocd_notifications_trigger_eval_total{name="on-deployed",triggered="true"}`
	before, err := nctl.Metric(ctx, evalTrue)
	must(t, err)
	sync(now.Add(5 * time.Second))
	waitFor(t, 20*time.Second, "re-evaluation of on-deployed", func() bool {
		v, err := nctl.Metric(ctx, evalTrue)
		return err == nil && v > before
	})
	select {
	case h := <-hits:
		t.Fatalf("second webhook for the same revision: %s", h.body)
	case <-time.After(2 * time.Second):
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
