//go:build e2e

package smoke

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	"github.com/fluxcd/pkg/runtime/events"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/internal/testenv"
)

type signedPost struct {
	body      []byte
	signature string
	validSig  bool
}

// validSignature checks a generic-hmac X-Signature ("sha256=<hex>") over the
// raw body, in constant time.
func validSignature(key, body []byte, header string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// TestFluxNotificationController: an event posted by Flux's own recorder
// about a real Kustomization reaches an HTTP sink through the real
// notification-controller and a generic-hmac Provider, signed over the raw
// body with the Provider's secret.
func TestFluxNotificationController(t *testing.T) {
	testenv.RequireNotificationController(t)
	api := testenv.StartAPIServer(t, testenv.APIServerOptions{CRDPaths: []string{testenv.FluxCRDs(t)}})
	nc := testenv.StartNotificationController(t, api)
	ctx := testContext(t, 3*time.Minute)
	c := api.Client
	const ns = "flux-system"
	hmacKey := []byte("hmac-key-0123456789")

	posts := make(chan signedPost, 16)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sig := r.Header.Get("X-Signature")
		ok := validSignature(hmacKey, body, sig)
		if !ok {
			http.Error(w, "bad signature", http.StatusUnauthorized)
		}
		posts <- signedPost{body: body, signature: sig, validSig: ok}
	}))
	t.Cleanup(sink.Close)

	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "throughline-hmac", Namespace: ns},
		StringData: map[string]string{"token": string(hmacKey)},
	}))
	for _, obj := range []map[string]any{
		{
			"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Provider",
			"metadata": map[string]any{"name": "throughline", "namespace": ns},
			"spec": map[string]any{
				"type": "generic-hmac", "address": sink.URL + "/v1/flux",
				"secretRef": map[string]any{"name": "throughline-hmac"},
			},
		},
		{
			"apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
			"metadata": map[string]any{"name": "throughline", "namespace": ns},
			"spec": map[string]any{
				"providerRef":   map[string]any{"name": "throughline"},
				"eventSeverity": "info",
				"eventSources":  []any{map[string]any{"kind": "Kustomization", "name": "*"}},
			},
		},
	} {
		must(t, c.Create(ctx, &unstructured.Unstructured{Object: obj}))
	}

	// A real Kustomization (Flux's CRD), with the status kustomize-controller writes.
	const revision = "main@sha1:0123456789abcdef0123456789abcdef01234567"
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "web-staging", "namespace": ns},
		"spec": map[string]any{
			"interval": "5m", "path": "./envs/staging/web", "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops"},
		},
	}}
	must(t, c.Create(ctx, ks))
	must(t, unstructured.SetNestedField(ks.Object, revision, "status", "lastAppliedRevision"))
	must(t, c.Status().Update(ctx, ks))
	got := ks.DeepCopy()
	must(t, c.Get(ctx, client.ObjectKeyFromObject(ks), got))
	if r, _, _ := unstructured.NestedString(got.Object, "status", "lastAppliedRevision"); r != revision {
		t.Fatalf("Kustomization status.lastAppliedRevision = %q, want %q", r, revision)
	}

	// Flux's own recorder, as kustomize-controller posts events.
	rec, err := events.NewRecorder(testr.New(t), nc.EventsURL, "kustomize-controller", events.WithScheme(api.Scheme))
	must(t, err)
	// The controller reads Alerts and Providers through its cache, so the
	// first events may find no Alert yet: post until one is forwarded (each
	// message differs so the controller's duplicate filter keeps none back).
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 1; ; attempt++ {
		rec.AnnotatedEventf(got, nil, map[string]string{"kustomize.toolkit.fluxcd.io/revision": revision},
			corev1.EventTypeNormal, "ReconciliationSucceeded", "", "Reconciliation finished, attempt %d", attempt)
		select {
		case p := <-posts:
			if !p.validSig {
				t.Fatalf("X-Signature %q does not verify over the body: %s", p.signature, p.body)
			}
			if validSignature([]byte("another-key"), p.body, p.signature) {
				t.Fatal("signature verifies with a different key")
			}
			var ev eventv1.Event
			must(t, json.Unmarshal(p.body, &ev))
			if ev.InvolvedObject.Kind != "Kustomization" || ev.InvolvedObject.Name != "web-staging" ||
				ev.InvolvedObject.Namespace != ns || ev.InvolvedObject.UID != got.GetUID() {
				t.Fatalf("event about %+v, want Kustomization %s/web-staging uid %s", ev.InvolvedObject, ns, got.GetUID())
			}
			if ev.Reason != "ReconciliationSucceeded" || ev.Severity != eventv1.EventSeverityInfo || ev.ReportingController != "kustomize-controller" {
				t.Fatalf("unexpected event %+v", ev)
			}
			if ev.Metadata["revision"] != revision {
				t.Fatalf("event metadata %v, want revision %s", ev.Metadata, revision)
			}
			t.Logf("forwarded after %d post(s), signed %s: %s", attempt, p.signature, p.body)
			return
		case <-time.After(2 * time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event forwarded to the sink after %d posts", attempt)
		}
	}
}
