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
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

var (
	digest  = "sha256:" + strings.Repeat("ab", 32)
	hashA   = "sha256:" + strings.Repeat("1", 64)
	hashB   = "sha256:" + strings.Repeat("2", 64)
	srcRev  = strings.Repeat("c", 40)
	stgRev  = strings.Repeat("d", 40)
	t0      = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	fluxKey = []byte("flux-hmac-key")
	argoTok = []byte("argocd-token")
)

// reconciling is the RECONCILING record of app in production.
func reconciling(t testing.TB, app, desired string) *promotion.Record {
	t.Helper()
	return reconcilingArtifact(t, app, desired, promotion.Artifact{Image: "ghcr.io/x/" + app + ":1@" + digest, Digest: digest, SourceCommit: srcRev})
}

// reconcilingArtifact is the RECONCILING record of app in production
// promoting art.
func reconcilingArtifact(t testing.TB, app, desired string, art promotion.Artifact) *promotion.Record {
	t.Helper()
	tg := promotion.Target{Environment: "production", Path: "apps/" + app + "/overlays/production", Cluster: "prod",
		RenderedHash: hashA, BaseRenderedHash: hashB, Renderer: "v0.1.0"}
	r, err := promotion.NewCandidate(app, 1, art, tg, t0, "ci")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		r.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: stgRev, ObservedRevision: stgRev, RenderedHash: hashB, RuntimeEvidence: "evidence/staging/" + app + "/x.json"}, t0.Add(time.Minute), "notifier"),
		r.Approve("alice", r.InputFor("v0.1.0"), t0.Add(24*time.Hour), t0.Add(2*time.Minute)),
		frozenOverride(r),
		r.Reconcile(desired, t0.Add(3*time.Minute), "ci"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// frozenOverride adds a freeze override by bob to the record of the app
// named "frozen" (promoted during a freeze).
func frozenOverride(r *promotion.Record) error {
	if r.App != "frozen" {
		return nil
	}
	return r.AddOverride("bob", "the launch freeze: hotfix", r.InputFor("v0.1.0"), t0.Add(2*time.Hour), t0.Add(2*time.Minute))
}

// fixture is a GitOps repository (bare origin plus the notifier's clone)
// whose main branch holds RECONCILING records for apps, each desiring the
// commit that changed its overlay.
type fixture struct {
	t       testing.TB
	origin  string
	repo    *gitrepo.Repo
	desired map[string]string
	live    *fakeLive
	handler *Handler
	server  *httptest.Server
	mu      sync.Mutex
	status  []*evidence.Record
}

func newFixture(t testing.TB, apps ...string) *fixture {
	t.Helper()
	return newFixtureOf(t, nil, apps...)
}

// newFixtureOf is newFixture whose records promote the artifact art(app)
// (nil: ghcr.io/x/<app>:1@digest).
func newFixtureOf(t testing.TB, art func(app string) promotion.Artifact, apps ...string) *fixture {
	t.Helper()
	base := t.TempDir()
	origin := filepath.Join(base, "origin.git")
	seed := filepath.Join(base, "seed")
	gittest.Run(t, base, "init", "-q", "--bare", "-b", "main", origin)
	gittest.Run(t, base, "clone", "-q", origin, seed)
	f := &fixture{t: t, origin: origin, desired: map[string]string{}, live: &fakeLive{m: map[string]*Live{}}}
	for _, app := range apps {
		f.desired[app] = gittest.Commit(t, seed, "promote "+app,
			map[string]string{"apps/" + app + "/overlays/production/kustomization.yaml": "images: [{name: x, digest: " + digest + "}]\n"})
	}
	records := map[string]string{}
	for _, app := range apps {
		rec := reconciling(t, app, f.desired[app])
		if art != nil {
			rec = reconcilingArtifact(t, app, f.desired[app], art(app))
		}
		y, err := rec.Marshal()
		must(t, err)
		records[promotion.RecordPath(app, "production")] = string(y)
		f.live.set(app, verified(app))
	}
	gittest.Commit(t, seed, "records", records)
	gittest.Run(t, seed, "push", "-q", "origin", "main")
	work := filepath.Join(base, "work")
	gittest.Run(t, base, "clone", "-q", origin, work)
	r, err := gitrepo.Open(context.Background(), work)
	must(t, err)
	r.Env = []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1"}
	f.repo = r
	proc := &Processor{
		Git:    &evidence.GitSink{Repo: r, Branch: "main", Attempts: 50},
		Live:   f.live,
		Now:    func() time.Time { return t0.Add(time.Hour) },
		Status: func(ev *evidence.Record) { f.mu.Lock(); f.status = append(f.status, ev); f.mu.Unlock() },
	}
	h, err := New(Config{FluxKey: fluxKey, ArgoCDToken: argoTok, MaxBody: 64 << 10, Rate: -1, ProcessTimeout: 30 * time.Second}, proc, nil)
	must(t, err)
	f.handler = h
	f.server = httptest.NewServer(h)
	t.Cleanup(f.server.Close)
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tip is origin's main.
func (f *fixture) tip() string { return gittest.Run(f.t, f.origin, "rev-parse", "main") }

func (f *fixture) commits() int {
	n := gittest.Run(f.t, f.origin, "rev-list", "--count", "main")
	var c int
	_ = json.Unmarshal([]byte(n), &c)
	return c
}

func (f *fixture) show(p string) string {
	return gittest.Run(f.t, f.origin, "show", "main:"+p)
}

// checkoutRecord is the promotion record of checkout in production on
// the origin's main.
func (f *fixture) checkoutRecord() *promotion.Record {
	r, err := promotion.Parse("x", []byte(f.show(promotion.RecordPath("checkout", "production"))))
	must(f.t, err)
	return r
}

type fakeLive struct {
	mu  sync.Mutex
	m   map[string]*Live
	err error
}

func (l *fakeLive) set(app string, v *Live) { l.mu.Lock(); l.m[app] = v; l.mu.Unlock() }

func (l *fakeLive) Get(_ context.Context, ev Event) (*Live, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	v, ok := l.m[ev.App]
	if !ok {
		return nil, ErrNoAcceptance
	}
	return v, nil
}

func verified(app string) *Live {
	return liveWith(app, metav1.ConditionTrue, v1alpha1.ReasonVerified, "all images verified", health.Verified)
}

func liveWith(app string, st metav1.ConditionStatus, reason, msg string, outcome health.Outcome) *Live {
	vt := metav1.NewTime(t0.Add(30 * time.Minute))
	return &Live{Namespace: "shop", Name: app, Generation: 2, RenderedHash: hashA, Status: v1alpha1.AcceptanceStatus{
		ObservedGeneration: 2, RenderedHash: hashA, VerifiedAt: &vt,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: st, Reason: reason, Message: msg}},
		Workloads: []v1alpha1.WorkloadStatus{{Kind: "Deployment", Namespace: "shop", Name: app, Outcome: outcome, Pods: 2, Containers: []v1alpha1.ContainerStatus{{
			Name: "app", Digest: digest, Outcome: outcome,
			Observed: []v1alpha1.ObservedImage{{ImageID: "ghcr.io/x/" + app + "@" + digest, Outcome: outcome, Match: v1alpha1.MatchExact, Pods: 2, Pod: app + "-7d9f-abcde"}},
		}}}},
	}}
}

// fluxBody is a Flux event (severity info) about app at rev.
func fluxBody(t testing.TB, app, rev, reason string) []byte {
	t.Helper()
	ev := eventv1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: app, APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
		Severity:       "info", Timestamp: metav1.NewTime(t0), Message: "Reconciliation finished", Reason: reason,
		Metadata:            map[string]string{"revision": "main@sha1:" + rev, "app": app, "environment": "production"},
		ReportingController: "kustomize-controller", ReportingInstance: "kustomize-controller-abc",
	}
	b, err := json.Marshal(ev)
	must(t, err)
	return b
}

func sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (f *fixture) post(path string, body []byte, header map[string]string) (int, reply) {
	f.t.Helper()
	return postTo(f.t, f.server.URL+path, body, header)
}

func postTo(t testing.TB, url string, body []byte, header map[string]string) (int, reply) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return 0, reply{}
	}
	defer resp.Body.Close()
	var r reply
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r
}

func (f *fixture) flux(body []byte) (int, reply) {
	return f.post("/v1/flux", body, map[string]string{SignatureHeader: sign(fluxKey, body)})
}

// argoBody is an Argo CD notification about checkout at rev.
func argoBody(rev, health string) []byte {
	b, _ := json.Marshal(ArgoCDPayload{Trigger: "on-deployed", Application: "checkout", Namespace: "argocd", App: "<no value>", Environment: "production",
		Revision: rev, SyncStatus: "Synced", Phase: "Succeeded", Health: health})
	return b
}

func (f *fixture) argo(body []byte) (int, reply) {
	return f.post("/v1/argocd", body, map[string]string{"Authorization": "Bearer " + string(argoTok)})
}
