package notifier

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
)

func TestFluxAcceptedThenReplay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	before := f.commits()
	body := fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")
	code, rep := f.flux(body)
	if code != 200 || rep.Result != resultAccepted || rep.Commit == "" {
		t.Fatalf("first delivery: %d %+v", code, rep)
	}
	if f.commits() != before+1 || f.tip() != rep.Commit {
		t.Fatalf("want one evidence commit at the tip, got %d commits, tip %s", f.commits()-before, f.tip())
	}
	rec := f.checkoutRecord()
	if rec.State != promotion.Accepted || rec.Accepted.ObservedRevision != f.desired["checkout"] {
		t.Fatalf("record %s %+v", rec.State, rec.Accepted)
	}
	evPath := evidence.Path("production", "checkout", rec.PromotionID)
	ev, err := evidence.Parse(evPath, []byte(f.show(evPath)))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Decision != promotion.Accepted || ev.DesiredRevision != ev.ObservedRevision || ev.ArtifactDigest != digest ||
		len(ev.Pods) != 1 || ev.Pods[0].Match != "Exact" || ev.ReportedBy.Controller != "kustomize-controller" || ev.RenderedHash != hashA {
		t.Fatalf("evidence %+v", ev)
	}
	if rec.Accepted.RuntimeEvidence != evPath {
		t.Fatalf("runtimeEvidence %q, want %q", rec.Accepted.RuntimeEvidence, evPath)
	}
	// Replayed: same answer, no second commit, counted as a duplicate.
	for range 3 {
		code, rep = f.flux(body)
		if code != 200 || rep.Result != resultDuplicate {
			t.Fatalf("replay: %d %+v", code, rep)
		}
	}
	if f.commits() != before+1 {
		t.Fatalf("replay made %d commits", f.commits()-before-1)
	}
	if len(f.status) != 1 {
		t.Fatalf("%d commit statuses, want 1", len(f.status))
	}
}

func TestAuthRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	tip := f.tip()
	body := fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")
	wrong := hmac.New(sha512.New, []byte("not the key"))
	wrong.Write(body)
	for name, h := range map[string]map[string]string{
		"missing":        nil,
		"wrong key":      {SignatureHeader: "sha512=" + hex.EncodeToString(wrong.Sum(nil))},
		"not hex":        {SignatureHeader: "sha256=zz"},
		"sha1":           {SignatureHeader: "sha1=" + strings.Repeat("0", 40)},
		"other body":     {SignatureHeader: sign(fluxKey, append([]byte(" "), body...))},
		"no algorithm":   {SignatureHeader: strings.TrimPrefix(sign(fluxKey, body), "sha256=")},
		"bearer on flux": {"Authorization": "Bearer " + string(argoTok)},
	} {
		if code, rep := f.post("/v1/flux", body, h); code != http.StatusUnauthorized || rep.Result != resultUnauthorized {
			t.Errorf("flux %s: %d %+v", name, code, rep)
		}
	}
	ab := argoBody(f.desired["checkout"], "Healthy")
	for name, h := range map[string]map[string]string{
		"missing": nil,
		"wrong":   {"Authorization": "Bearer nope"},
		"prefix":  {"Authorization": "Bearer " + string(argoTok[:4])},
		"scheme":  {"Authorization": "Basic " + string(argoTok)},
	} {
		if code, _ := f.post("/v1/argocd", ab, h); code != http.StatusUnauthorized {
			t.Errorf("argocd %s: %d", name, code)
		}
	}
	if f.tip() != tip {
		t.Fatal("a refused delivery wrote to Git")
	}
}

func TestSignatureAlgorithms(t *testing.T) {
	t.Parallel()
	body := []byte(`{"x":1}`)
	for _, fn := range []struct {
		name string
		sum  func() []byte
	}{
		{"sha384", func() []byte { m := hmac.New(sha512.New384, fluxKey); m.Write(body); return m.Sum(nil) }},
		{"sha512", func() []byte { m := hmac.New(sha512.New, fluxKey); m.Write(body); return m.Sum(nil) }},
	} {
		if !VerifySignature(fluxKey, fn.name+"="+hex.EncodeToString(fn.sum()), body) {
			t.Errorf("%s refused", fn.name)
		}
	}
	if !VerifySignature(fluxKey, sign(fluxKey, body), body) || VerifySignature(nil, sign(nil, body), body) {
		t.Error("sha256, or an empty key")
	}
}

func TestArgoCDAccepted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	code, rep := f.argo(argoBody(f.desired["checkout"], "Healthy"))
	if code != 200 || rep.Result != resultAccepted {
		t.Fatalf("%d %+v", code, rep)
	}
	if code, rep := f.argo(argoBody(f.desired["checkout"], "Healthy")); code != 200 || rep.Result != resultDuplicate {
		t.Fatalf("replay %d %+v", code, rep)
	}
}

func TestOversizedAndMalformed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	tip := f.tip()
	big := []byte(`{"pad":"` + strings.Repeat("x", 70<<10) + `"}`)
	if code, rep := f.flux(big); code != http.StatusRequestEntityTooLarge || rep.Result != resultTooLarge {
		t.Errorf("oversized: %d %+v", code, rep)
	}
	// Chunked, without a Content-Length: the reader still stops.
	req, _ := http.NewRequest(http.MethodPost, f.server.URL+"/v1/argocd", io.MultiReader(strings.NewReader(string(big))))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+string(argoTok))
	resp, err := f.server.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversized: %d", resp.StatusCode)
	}
	for name, body := range map[string]string{
		"not json":      `{"involvedObject":`,
		"array":         `[1,2]`,
		"no object":     `{"severity":"info","reason":"ReconciliationSucceeded","metadata":{"revision":"main@sha1:` + f.desired["checkout"] + `"}}`,
		"bad revision":  string(fluxBody(t, "checkout", "nothex", "ReconciliationSucceeded")),
		"no env":        strings.Replace(string(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")), `"environment":"production"`, `"x":"y"`, 1),
		"wrong type":    `{"involvedObject":{"kind":"Kustomization","name":"x"},"metadata":{"revision":5}}`,
		"trailing junk": `}`,
	} {
		if code, rep := f.flux([]byte(body)); code != http.StatusBadRequest || rep.Result != resultMalformed {
			t.Errorf("%s: %d %+v", name, code, rep)
		}
	}
	if code, _ := f.argo([]byte(`{"application":`)); code != http.StatusBadRequest {
		t.Errorf("argocd malformed: %d", code)
	}
	if code, rep := f.flux(fluxBody(t, "checkout", f.desired["checkout"], "Progressing")); code != 200 || rep.Result != resultIgnored {
		t.Errorf("progressing: %d %+v", code, rep)
	}
	if f.tip() != tip {
		t.Fatal("a refused delivery wrote to Git")
	}
	if code, _ := f.post("/v1/flux", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("empty unsigned: %d", code)
	}
	resp, err = f.server.Client().Get(f.server.URL + "/v1/flux")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

// TestUnknownApp: an app with an Alert or a subscription but no promotion
// record yet (or a name that is not one) is answered 200 "ignored",
// logged and counted, never 404: a 404 makes Flux's notification-controller
// put a Warning event on the Alert at every reconciliation (issue 22).
func TestUnknownApp(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	tip := f.tip()
	code, rep := f.flux(fluxBody(t, "payments", f.desired["checkout"], "ReconciliationSucceeded"))
	if code != http.StatusOK || rep.Result != resultIgnored || !strings.Contains(rep.Reason, "no promotion record") || f.tip() != tip {
		t.Fatalf("%d %+v, want 200 ignored", code, rep)
	}
	// The app and environment of a delivery become paths in the repository:
	// anything that is not a name is unknown, never a path outside
	// promotion/ and evidence/.
	apps := []string{"../checkout", "checkout/../checkout", "Checkout", ".."}
	for _, app := range apps {
		code, rep := f.flux(fluxBody(t, app, f.desired["checkout"], "ReconciliationSucceeded"))
		if code != http.StatusOK || rep.Result != resultIgnored || f.tip() != tip {
			t.Fatalf("app %q: %d %+v", app, code, rep)
		}
	}
	if got := testutilCount(f.handler.Metrics().Ignored.WithLabelValues("flux", IgnoredUnknownApp)); got != float64(1+len(apps)) {
		t.Fatalf("ignored unknown-app deliveries counted %v, want %d", got, 1+len(apps))
	}
}

func TestWrongRevisionHalts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	other := strings.Repeat("e", 40) // not in the repository
	code, rep := f.flux(fluxBody(t, "checkout", other, "ReconciliationSucceeded"))
	if code != 200 || rep.Result != resultHalted || !strings.Contains(rep.Reason, "wrong revision") {
		t.Fatalf("%d %+v", code, rep)
	}
	rec := f.checkoutRecord()
	if rec.State != promotion.Halted || rec.Accepted != nil || !strings.Contains(rec.Reason, "wrong revision") {
		t.Fatalf("record %s %q", rec.State, rec.Reason)
	}
	// The desired commit arriving afterwards does not reopen a HALTED record.
	code, rep = f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
	if code != 200 || rep.Result != resultIgnored || f.checkoutRecord().State != promotion.Halted {
		t.Fatalf("after HALTED: %d %+v", code, rep)
	}
	if got := testutilCount(f.handler.Metrics().Failures.WithLabelValues(ClassSource)); got != 1 {
		t.Fatalf("source failures %v", got)
	}
}

// TestLaterRevision: the controller synced a later commit of the branch (here
// the records commit on top of the desired one). It counts when its
// Acceptance declares the approved rendered hash, and the evidence says
// why; a later commit rendering other objects is HALTED.
func TestLaterRevision(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		hash   string
		result string
		state  promotion.State
		reason string
	}{
		{"same render", hashA, resultAccepted, promotion.Accepted, "later than the desired"},
		{"other render", hashB, resultHalted, promotion.Halted, "rendered hash mismatch: the controller observed"},
		{"no rendered hash", "", resultHalted, promotion.Halted, "cannot tell whether"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			live := verified("checkout")
			live.RenderedHash, live.Status.RenderedHash = c.hash, c.hash
			f.live.set("checkout", live)
			later := f.tip()
			code, rep := f.flux(fluxBody(t, "checkout", later, "ReconciliationSucceeded"))
			if code != 200 || rep.Result != c.result {
				t.Fatalf("%d %+v", code, rep)
			}
			rec := f.checkoutRecord()
			if rec.State != c.state {
				t.Fatalf("record %s %q", rec.State, rec.Reason)
			}
			var ev evidence.Record
			must(t, json.Unmarshal([]byte(f.show(evidence.Path("production", "checkout", rec.PromotionID))), &ev))
			if ev.ObservedRevision != later || ev.DesiredRevision != f.desired["checkout"] || !strings.Contains(ev.Reason, c.reason) {
				t.Fatalf("evidence observed %s desired %s reason %q", ev.ObservedRevision, ev.DesiredRevision, ev.Reason)
			}
			if c.state == promotion.Accepted && rec.Accepted.ObservedRevision != later {
				t.Fatalf("record accepted at %s, want %s", rec.Accepted.ObservedRevision, later)
			}
		})
	}
}

func TestAncestorRevisionWaits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout", "payments")
	tip := f.tip()
	// checkout's desired commit is an ancestor of payments' desired commit.
	code, rep := f.flux(fluxBody(t, "payments", f.desired["checkout"], "ReconciliationSucceeded"))
	if code != http.StatusServiceUnavailable || rep.Result != resultWait || f.tip() != tip {
		t.Fatalf("%d %+v", code, rep)
	}
}

func TestLiveDecisions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		live    *Live
		health  string
		code    int
		result  string
		reason  string
		state   promotion.State
		written bool
	}{
		{"rollout in progress", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonRolloutInProgress, "2/3 updated", health.Pending), "Progressing", 503, resultWait, "RolloutInProgress", promotion.Reconciling, false},
		{"unverifiable", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonUnverifiable, "registry down", health.Unverifiable), "Healthy", 503, resultWait, "Unverifiable", promotion.Reconciling, false},
		{"image mismatch", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonImageMismatch, "app runs sha256:ee", health.Mismatch), "Degraded", 200, resultHalted, "image mismatch", promotion.Halted, true},
		// The verifier reports a workload it cannot find yet as pending, and
		// Argo CD's health says Progressing: the notifier waits too.
		{"workload not found", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonWorkloadNotFound, "not found: Deployment shop/web", health.Pending),
			"Progressing", 503, resultWait, "WorkloadNotFound", promotion.Reconciling, false},
		{"invalid", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonInvalid, "spec.workloads[0]: kind and name are required", health.Mismatch),
			"Degraded", 200, resultHalted, "image mismatch", promotion.Halted, true},
		{"Ready=True with reason ImageMismatch", liveWith("checkout", metav1.ConditionTrue, v1alpha1.ReasonImageMismatch, "app runs sha256:ee", health.Mismatch),
			"Healthy", 200, resultHalted, "image mismatch", promotion.Halted, true},
		// Degraded for a reason of the controller's own while the Acceptance
		// is verified: waited for (TestWhatHalts).
		{"degraded", verified("checkout"), "Degraded", 503, resultWait, "waiting: Application/argocd/checkout reports on-deployed: health Degraded",
			promotion.Reconciling, false},
		{"no acceptance", nil, "Healthy", 503, resultWait, "no Acceptance", promotion.Reconciling, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			if c.live == nil {
				delete(f.live.m, "checkout")
			} else {
				f.live.set("checkout", c.live)
			}
			tip := f.tip()
			code, rep := f.argo(argoBody(f.desired["checkout"], c.health))
			if code != c.code || rep.Result != c.result || !strings.Contains(rep.Reason, c.reason) {
				t.Fatalf("%d %+v", code, rep)
			}
			if (f.tip() != tip) != c.written || f.checkoutRecord().State != c.state {
				t.Fatalf("written %v, state %s", f.tip() != tip, f.checkoutRecord().State)
			}
		})
	}
}

func TestRenderedHashMismatchHalts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	l := verified("checkout")
	l.RenderedHash, l.Status.RenderedHash = hashB, hashB
	f.live.set("checkout", l)
	code, rep := f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
	if code != 200 || rep.Result != resultHalted || !strings.Contains(rep.Reason, "rendered hash") {
		t.Fatalf("%d %+v", code, rep)
	}
}

func TestGitDownAnswers5xx(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	must(t, os.Rename(f.origin, f.origin+".gone"))
	code, rep := f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
	if code < 500 || rep.Result != resultError {
		t.Fatalf("%d %+v", code, rep)
	}
	must(t, os.Rename(f.origin+".gone", f.origin))
	// The retry succeeds.
	if code, rep := f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")); code != 200 || rep.Result != resultAccepted {
		t.Fatalf("retry: %d %+v", code, rep)
	}
}

func TestAPIServerDownAnswers5xx(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	f.live.err = errors.New("connection refused")
	tip := f.tip()
	if code, _ := f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")); code != http.StatusServiceUnavailable || f.tip() != tip {
		t.Fatalf("%d", code)
	}
}

func TestRateLimit(t *testing.T) {
	f := newFixture(t, "checkout")
	h, err := New(Config{FluxKey: fluxKey, Rate: 1, Burst: 2}, f.handler.proc, nil)
	must(t, err)
	f.server.Config.Handler = h
	body := fluxBody(t, "checkout", f.desired["checkout"], "Progressing")
	var codes []int
	for range 4 {
		code, _ := f.flux(body)
		codes = append(codes, code)
	}
	if codes[2] != http.StatusTooManyRequests || codes[3] != http.StatusTooManyRequests {
		t.Fatalf("authenticated deliveries past the burst of 2: codes %v, want 429", codes)
	}
}

// TestUnauthenticatedFloodDoesNotStarve floods /v1/flux and /v1/argocd from
// the genuine sender's address with bad signatures and tokens, far past the
// rate and burst: each is refused 401 (never 429: it consumed nothing), and
// the genuine delivery that follows is still processed.
func TestUnauthenticatedFloodDoesNotStarve(t *testing.T) {
	f := newFixture(t, "checkout")
	h, err := New(Config{FluxKey: fluxKey, ArgoCDToken: argoTok, Rate: 1, Burst: 2}, f.handler.proc, nil)
	must(t, err)
	f.server.Config.Handler = h
	body := fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")
	bad := map[string]string{SignatureHeader: sign([]byte("not the key"), body)}
	for i := range 50 {
		if code, rep := f.post("/v1/flux", body, bad); code != http.StatusUnauthorized || rep.Result != resultUnauthorized {
			t.Fatalf("bad signature %d: %d %+v, want 401 unauthorized", i, code, rep)
		}
		if code, _ := f.post("/v1/argocd", argoBody(f.desired["checkout"], "Healthy"), map[string]string{"Authorization": "Bearer nope"}); code != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d, want 401", i, code)
		}
	}
	if code, rep := f.flux(body); code != http.StatusOK || rep.Result != resultAccepted {
		t.Fatalf("the genuine delivery after the flood: %d %+v, want 200 accepted", code, rep)
	}
}

func TestProbesAndMetrics(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
	f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := f.server.Client().Get(f.server.URL + p)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		if p == "/metrics" {
			for _, want := range []string{
				`throughline_notifier_deliveries_received_total{source="flux"} 2`,
				`throughline_notifier_deliveries_duplicate_total{source="flux"} 1`,
				`throughline_notifier_evidence_written_total{decision="ACCEPTED"} 1`,
				`throughline_notifier_failures_total{class="live"} 0`,
			} {
				if !strings.Contains(string(b), want) {
					t.Errorf("metrics lack %s", want)
				}
			}
			if strings.Contains(string(b), string(fluxKey)) {
				t.Error("metrics leak the key")
			}
		}
	}
}

// TestRecordOfAnotherAppIsUnusable: the record at promotion/ops/production.yaml
// names another app; the notifier reads it with promotion.ReadRecord, so it
// is never taken for ops' record: nothing is written, the answer says the
// record cannot be used.
func TestRecordOfAnotherAppIsUnusable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	seed := filepath.Join(t.TempDir(), "seed")
	gittest.Run(t, filepath.Dir(seed), "clone", "-q", f.origin, seed)
	data, err := os.ReadFile(filepath.Join(seed, promotion.RecordPath("checkout", "production")))
	must(t, err)
	gittest.Commit(t, seed, "a copied record", map[string]string{promotion.RecordPath("ops", "production"): string(data)})
	gittest.Run(t, seed, "push", "-q", "origin", "main")
	tip := f.tip()
	code, rep := f.flux(fluxBody(t, "ops", f.desired["checkout"], "ReconciliationSucceeded"))
	if code != http.StatusInternalServerError || rep.Result != resultError || !strings.Contains(rep.Reason, "cannot be used") || f.tip() != tip {
		t.Fatalf("%d %+v", code, rep)
	}
}

// TestEvidenceCarriesOverrides (issue 39): a promotion that went in through
// a freeze with a signed override is decided with the override in its
// evidence (who, why, until when, the hash binding it), as in its record.
func TestEvidenceCarriesOverrides(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "frozen")
	code, rep := f.flux(fluxBody(t, "frozen", f.desired["frozen"], "ReconciliationSucceeded"))
	if code != 200 || rep.Result != resultAccepted {
		t.Fatalf("delivery: %d %+v", code, rep)
	}
	evPath := evidence.Path("production", "frozen", rep.PromotionID)
	ev, err := evidence.Parse(evPath, []byte(f.show(evPath)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Overrides) != 1 || ev.Overrides[0].Approver != "bob" || ev.Overrides[0].Reason != "the launch freeze: hotfix" ||
		ev.Overrides[0].InputHash == "" {
		t.Fatalf("evidence overrides %+v", ev.Overrides)
	}
}
