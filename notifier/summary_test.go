package notifier

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust/signing"
	"github.com/throughline-dev/throughline/vsa"
)

// summaryWorld is an in-process registry holding one image per app, which
// refuses every write while readOnly is set, and a summary key.
type summaryWorld struct {
	host     string
	readOnly atomic.Bool
	images   map[string]name.Digest
	keyPEM   []byte
}

func newSummaryWorld(t *testing.T, apps ...string) *summaryWorld {
	t.Helper()
	w := &summaryWorld{images: map[string]name.Digest{}}
	reg := ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.readOnly.Load() && r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(rw, "read-only", http.StatusForbidden)
			return
		}
		reg.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.host = strings.TrimPrefix(srv.URL, "http://")
	for _, app := range apps {
		img, err := random.Image(64, 1)
		must(t, err)
		tag, err := name.NewTag(w.host + "/x/" + app + ":1")
		must(t, err)
		must(t, remote.Write(tag, img))
		d, err := img.Digest()
		must(t, err)
		w.images[app] = tag.Context().Digest(d.String())
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	must(t, err)
	w.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return w
}

func (w *summaryWorld) artifact(app string) promotion.Artifact {
	img := w.images[app]
	return promotion.Artifact{Image: img.Context().Name() + ":1@" + img.DigestStr(), Digest: img.DigestStr(), SourceCommit: srcRev}
}

// summaryFixture is a fixture whose records promote w's images and whose
// processor publishes summaries with w's key.
func summaryFixture(t *testing.T, w *summaryWorld, apps ...string) (*fixture, *Summaries, *Metrics) {
	t.Helper()
	f := newFixtureOf(t, w.artifact, apps...)
	key, err := signing.LoadKey(w.keyPEM, nil)
	must(t, err)
	fast := remote.WithRetryBackoff(remote.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1})
	s := &Summaries{Publisher: &vsa.Publisher{Signer: key, Attempts: 2, Backoff: time.Millisecond, Remote: []remote.Option{fast}},
		Repository: "https://git.example/gitops.git", Metrics: f.handler.Metrics()}
	f.handler.proc.Summaries = s
	return f, s, f.handler.Metrics()
}

// TestAcceptancePublishesSummary: an ACCEPTED decision publishes the
// signed summary of the digest in production (attached to the image, found
// by its statement), names the acceptance commit, and records it in the
// evidence by a second commit; a replayed delivery publishes nothing more.
func TestAcceptancePublishesSummary(t *testing.T) {
	w := newSummaryWorld(t, "checkout")
	f, s, m := summaryFixture(t, w, "checkout")
	before := f.commits()
	body := fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")
	code, rep := f.flux(body)
	if code != 200 || rep.Result != resultAccepted {
		t.Fatalf("delivery: %d %+v", code, rep)
	}
	s.Wait()
	if got := testutilCount(m.Summaries.WithLabelValues("published")); got != 1 {
		t.Fatalf("published summaries = %v, want 1 (failed: %v)", got, testutilCount(m.Summaries.WithLabelValues("failed")))
	}
	if f.commits() != before+2 {
		t.Fatalf("%d commits, want the evidence and the summary's", f.commits()-before)
	}
	rec := f.checkoutRecord()
	evPath := evidence.Path("production", "checkout", rec.PromotionID)
	ev, err := evidence.Parse(evPath, []byte(f.show(evPath)))
	must(t, err)
	if ev.Time.IsZero() || gittest.Run(t, f.origin, "log", "-1", "--format=%H", "main", "--", evPath) != rep.Commit {
		t.Fatalf("the evidence changed after the acceptance commit %s", rep.Commit)
	}
	var sum evidence.Summary
	must(t, json.Unmarshal([]byte(f.show(evidence.SummaryPath(evPath))), &sum))
	if sum.AcceptanceCommit != rep.Commit || !promotion.ValidDigest(sum.Manifest) {
		t.Fatalf("%s = %+v, want one naming the acceptance commit %s", evidence.SummaryPath(evPath), sum, rep.Commit)
	}
	if rec.State != promotion.Accepted {
		t.Fatalf("record %s", rec.State)
	}
	// The statement published is the one the acceptance makes.
	want := &vsa.Summary{Image: w.images["checkout"].String(), Environment: "production", Time: ev.Time, RenderedHash: ev.RenderedHash,
		Repository: "https://git.example/gitops.git", AcceptanceCommit: rep.Commit, Evidence: evPath}
	stmt, err := want.Statement()
	must(t, err)
	found, err := vsa.Find(context.Background(), w.images["checkout"], stmt, nil)
	if err != nil || found == nil || found.Manifest != sum.Manifest {
		t.Fatalf("Find = %+v, %v; want the manifest %s", found, err, sum.Manifest)
	}
	for range 2 {
		if code, rep := f.flux(body); code != 200 || rep.Result != resultDuplicate {
			t.Fatalf("replay: %d %+v", code, rep)
		}
	}
	s.Wait()
	if got := testutilCount(m.Summaries.WithLabelValues("published")); got != 1 || f.commits() != before+2 {
		t.Fatalf("replays: %v published, %d commits", got, f.commits()-before)
	}
}

// TestRefusingRegistryLeavesAccepted: a registry that refuses the
// summary leaves the record ACCEPTED and its evidence as committed; the
// failure is counted, told, and noted on a second commit status.
func TestRefusingRegistryLeavesAccepted(t *testing.T) {
	w := newSummaryWorld(t, "checkout")
	w.readOnly.Store(true)
	f, s, m := summaryFixture(t, w, "checkout")
	var told atomic.Value
	s.OnError = func(_ *evidence.Record, err error) { told.Store(err) }
	before := f.commits()
	code, rep := f.flux(fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded"))
	if code != 200 || rep.Result != resultAccepted {
		t.Fatalf("delivery: %d %+v", code, rep)
	}
	s.Wait()
	if got := testutilCount(m.Summaries.WithLabelValues("failed")); got != 1 {
		t.Fatalf("failed summaries = %v, want 1", got)
	}
	if err, _ := told.Load().(error); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("OnError got %v, want the registry's 403", err)
	}
	if f.commits() != before+1 || f.checkoutRecord().State != promotion.Accepted {
		t.Fatalf("%d commits, record %s: want the acceptance alone", f.commits()-before, f.checkoutRecord().State)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.status) != 2 || f.status[0].SummaryNote != "" || f.status[1].Decision != promotion.Accepted ||
		!strings.Contains(f.status[1].SummaryNote, "not published") {
		t.Fatalf("statuses %+v, want ACCEPTED then ACCEPTED with a note", f.status)
	}
}

// TestSummaryKeyFile: no file, or a file that does not exist, turns the
// summaries off; a file that is not a key fails without its content.
func TestSummaryKeyFile(t *testing.T) {
	dir := t.TempDir()
	for _, file := range []string{"", filepath.Join(dir, "absent")} {
		if k, err := SummaryKey(file, nil); k != nil || err != nil {
			t.Fatalf("SummaryKey(%q) = %v, %v; want off", file, k, err)
		}
	}
	bad := filepath.Join(dir, "bad")
	must(t, os.WriteFile(bad, []byte("secret-not-a-key"), 0o600))
	if _, err := SummaryKey(bad, nil); err == nil || strings.Contains(err.Error(), "secret-not-a-key") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("SummaryKey(bad) = %v, want an error naming the file, not its content", err)
	}
	w := newSummaryWorld(t)
	good := filepath.Join(dir, "key")
	must(t, os.WriteFile(good, w.keyPEM, 0o600))
	if k, err := SummaryKey(good, nil); err != nil || k == nil {
		t.Fatalf("SummaryKey(good) = %v, %v", k, err)
	}
}

// TestSummarySigner: a key or keyless, exactly one: a key file that
// exists with a signing config is refused naming both files; a signing
// config without its token file (or a token without a config) too; a key
// flag whose file is absent (the Secret's optional key) leaves keyless on.
func TestSummarySigner(t *testing.T) {
	dir := t.TempDir()
	w := newSummaryWorld(t)
	key := filepath.Join(dir, "key")
	must(t, os.WriteFile(key, w.keyPEM, 0o600))
	token := filepath.Join(dir, "token")
	must(t, os.WriteFile(token, []byte("eyJ.a.b"), 0o600))
	config := filepath.Join(dir, "signing_config.json")
	must(t, os.WriteFile(config, []byte(`{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json",
  "caUrls":[{"url":"https://fulcio.sigstore.internal","majorApiVersion":1,"validFor":{"start":"2026-01-01T00:00:00Z"}}],
  "rekorTlogUrls":[{"url":"https://rekor.sigstore.internal","majorApiVersion":2,"validFor":{"start":"2026-01-01T00:00:00Z"}}],
  "rekorTlogConfig":{"selector":"ANY"},
  "tsaUrls":[{"url":"https://tsa.sigstore.internal/api/v1/timestamp","majorApiVersion":1,"validFor":{"start":"2026-01-01T00:00:00Z"}}],
  "tsaConfig":{"selector":"ANY"}}`), 0o600))
	notAConfig := filepath.Join(dir, "not-a-config.json")
	must(t, os.WriteFile(notAConfig, []byte(`{"mediaType":"something else"}`), 0o600))
	for _, tc := range []struct {
		name string
		cfg  ServiceConfig
		want string // the signer's Describe, or "error: <part of it>"
	}{
		{"neither", ServiceConfig{}, ""},
		{"a key", ServiceConfig{SummaryKeyFile: key}, "key "},
		{"keyless", ServiceConfig{SummarySigningConfigFile: config, SummaryIdentityTokenFile: token},
			"keyless (Fulcio https://fulcio.sigstore.internal)"},
		{"keyless beside an absent key", ServiceConfig{SummaryKeyFile: filepath.Join(dir, "absent"), SummarySigningConfigFile: config,
			SummaryIdentityTokenFile: token}, "keyless (Fulcio https://fulcio.sigstore.internal)"},
		{"a key and keyless", ServiceConfig{SummaryKeyFile: key, SummarySigningConfigFile: config, SummaryIdentityTokenFile: token},
			"error: exactly one"},
		{"a signing config without a token", ServiceConfig{SummarySigningConfigFile: config}, "error: without an identity token file"},
		{"a token without a signing config", ServiceConfig{SummaryIdentityTokenFile: token}, "error: without a signing config"},
		{"a signing config that is not one", ServiceConfig{SummarySigningConfigFile: notAConfig, SummaryIdentityTokenFile: token},
			"error: " + notAConfig},
		{"no signing config file", ServiceConfig{SummarySigningConfigFile: filepath.Join(dir, "absent.json"), SummaryIdentityTokenFile: token},
			"error: absent.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SummarySigner(tc.cfg)
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("SummarySigner = %v, %v; want an error saying %q", s, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s != nil {
				got = s.Describe()
			}
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Fatalf("SummarySigner: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSecretFilesBounded: the notifier's own files (the evidence key, the
// summary key, the keyless signing config) are read through one bounded
// reader: a file of gigabytes is refused after its cap, naming the file and
// never its content, for each of them; a directory is refused too.
func TestSecretFilesBounded(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge")
	must(t, os.WriteFile(huge, []byte(strings.Repeat("SECRETBYTES", (maxSigningConfig/11)+10)), 0o600))
	token := filepath.Join(dir, "token")
	must(t, os.WriteFile(token, []byte("a.b.c"), 0o600))
	for _, tc := range []struct {
		name string
		read func(file string) error
	}{
		{"evidence key", func(f string) error { _, err := EvidenceSigner(f); return err }},
		{"summary key", func(f string) error { _, err := SummaryKey(f, nil); return err }},
		{"signing config", func(f string) error {
			_, err := SummarySigner(ServiceConfig{SummarySigningConfigFile: f, SummaryIdentityTokenFile: token})
			return err
		}},
	} {
		for _, file := range []string{huge, dir} {
			err := tc.read(file)
			if err == nil || !strings.Contains(err.Error(), file) || strings.Contains(err.Error(), "SECRETBYTES") {
				t.Errorf("%s %s: %v, want a refusal naming the file, not its content", tc.name, file, err)
			}
		}
	}
}
