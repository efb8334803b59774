package vsa

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
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

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/signing"
)

const hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// summary is a summary of img with every field set.
func summary(img string) *Summary {
	return &Summary{
		Image:            img,
		Charts:           []Chart{{Name: "oci://charts.example/checkout", Digest: "sha256:" + strings.Repeat("c", 64)}},
		Environment:      "staging",
		Time:             time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC),
		TrustPolicy:      "sha256:" + strings.Repeat("1", 64),
		Checks:           "sha256:" + strings.Repeat("2", 64),
		Inputs:           []string{"sha256:" + strings.Repeat("b", 64), "sha256:" + hexA, "sha256:" + hexA},
		RenderedHash:     "sha256:" + strings.Repeat("3", 64),
		Repository:       "https://git.example/gitops.git",
		AcceptanceCommit: strings.Repeat("4", 40),
		Evidence:         "evidence/staging/checkout/p-1.json",
	}
}

// TestStatementGolden: the statement of a summary is canonical JSON, the
// same bytes for the same summary (inputs in any order, duplicated), and
// says what testdata/statement.json shows.
func TestStatementGolden(t *testing.T) {
	s := summary("registry.example/checkout@sha256:" + strings.Repeat("d", 64))
	got, err := s.Statement()
	if err != nil {
		t.Fatal(err)
	}
	again := summary(s.Image)
	again.Inputs = []string{again.Inputs[2], again.Inputs[0]}
	second, err := again.Statement()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, second) {
		t.Fatalf("the same summary made two statements:\n%s\n%s", got, second)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "statement.json")
	if os.Getenv("THROUGHLINE_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Fatalf("statement:\n%s\nwant (%s):\n%s", pretty.Bytes(), golden, want)
	}
}

// TestStatementRefuses: a summary that cannot say what it must is refused.
func TestStatementRefuses(t *testing.T) {
	img := "registry.example/checkout@sha256:" + strings.Repeat("d", 64)
	for _, tc := range []struct {
		name   string
		change func(*Summary)
		want   string
	}{
		{"image by tag", func(s *Summary) { s.Image = "registry.example/checkout:1.0" }, "digest reference"},
		{"no environment", func(s *Summary) { s.Environment = "" }, "no environment"},
		{"chart digest", func(s *Summary) { s.Charts[0].Digest = "sha256:XYZ" }, "chart"},
		{"input digest", func(s *Summary) { s.Inputs = []string{"md5:abc"} }, "input attestation"},
		{"trust policy hash", func(s *Summary) { s.TrustPolicy = hexA }, "trust policy hash"},
		{"checks hash", func(s *Summary) { s.Checks = "sha256:" + strings.ToUpper(hexA) }, "checks hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := summary(img)
			tc.change(s)
			if _, err := s.Statement(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// key is a new P-256 signing key.
func key(t *testing.T) *signing.Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := signing.LoadKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// testRegistry is an in-process registry (referrers: with the referrers
// API) behind refuse: while it returns true for a request, the registry
// answers 503. It counts manifest pushes.
type testRegistry struct {
	host   string
	refuse atomic.Value // func(*http.Request) bool
	pushes atomic.Int32
}

func newRegistry(t *testing.T, referrers bool) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	r.refuse.Store(func(*http.Request) bool { return false })
	reg := ggcrregistry.New(ggcrregistry.WithReferrersSupport(referrers), ggcrregistry.Logger(log.New(&bytes.Buffer{}, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.refuse.Load().(func(*http.Request) bool)(req) {
			http.Error(w, "read-only", http.StatusServiceUnavailable)
			return
		}
		if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/manifests/sha256:") {
			r.pushes.Add(1)
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// image pushes a random image to repo and returns its digest reference.
func (r *testRegistry) image(t *testing.T, repo string) name.Digest {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(r.host + "/" + repo + ":1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

// TestPublishIdempotent: publishing a summary attaches it once; the same
// summary published again (by this publisher or another replica with the
// same key) is found and not pushed again, with the referrers API and
// without it (ggcr's referrers tag, as cosign falls back); another summary
// is pushed beside it.
func TestPublishIdempotent(t *testing.T) {
	ctx := context.Background()
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "referrers tag"}[referrers], func(t *testing.T) {
			reg := newRegistry(t, referrers)
			img := reg.image(t, "checkout")
			p := &Publisher{Signer: key(t), Backoff: time.Millisecond}
			s := summary(img.String())
			first, err := p.Publish(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if first.Existing || first.Manifest == "" || first.Bundle == "" {
				t.Fatalf("first publish = %+v", first)
			}
			pushes := reg.pushes.Load()
			again, err := (&Publisher{Signer: p.Signer}).Publish(ctx, summary(img.String()))
			if err != nil {
				t.Fatal(err)
			}
			if !again.Existing || again.Manifest != first.Manifest || again.Bundle != first.Bundle || again.Statement != first.Statement {
				t.Fatalf("second publish = %+v, want the first %+v found", again, first)
			}
			if n := reg.pushes.Load(); n != pushes {
				t.Fatalf("the second publish pushed %d manifests", n-pushes)
			}
			prod := summary(img.String())
			prod.Environment = "production"
			other, err := p.Publish(ctx, prod)
			if err != nil {
				t.Fatal(err)
			}
			if other.Existing || other.Manifest == first.Manifest {
				t.Fatalf("another summary = %+v, want a new referrer", other)
			}
			stmt, err := s.Statement()
			if err != nil {
				t.Fatal(err)
			}
			found, err := Find(ctx, img, stmt, nil)
			if err != nil || found == nil || found.Manifest != first.Manifest {
				t.Fatalf("Find = %+v, %v; want %s", found, err, first.Manifest)
			}
		})
	}
}

// TestPublishRetries: a registry that refuses writes for a while gets the
// summary after backoff; one that keeps refusing fails the publish after
// its attempts, with the registry's answer in the error, and nothing is
// attached.
func TestPublishRetries(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, true)
	img := reg.image(t, "checkout")
	var refused atomic.Int32
	reg.refuse.Store(func(req *http.Request) bool {
		if req.Method != http.MethodGet && req.Method != http.MethodHead && refused.Load() < 3 {
			refused.Add(1)
			return true
		}
		return false
	})
	// go-containerregistry's own retries of a 503, made fast.
	fast := remote.WithRetryBackoff(remote.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 2})
	p := &Publisher{Signer: key(t), Attempts: 5, Backoff: time.Millisecond, Remote: []remote.Option{fast}}
	if _, err := p.Publish(ctx, summary(img.String())); err != nil {
		t.Fatalf("publish through a registry that refused 3 writes: %v", err)
	}

	img2 := reg.image(t, "cart")
	reg.refuse.Store(func(req *http.Request) bool { return req.Method != http.MethodGet && req.Method != http.MethodHead })
	p.Attempts = 3
	_, err := p.Publish(ctx, summary(img2.String()))
	if err == nil || !strings.Contains(err.Error(), "3 attempts") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("publish to a read-only registry: %v, want the 3 attempts and the 503", err)
	}
	stmt, serr := summary(img2.String()).Statement()
	if serr != nil {
		t.Fatal(serr)
	}
	if found, ferr := Find(ctx, img2, stmt, nil); ferr != nil || found != nil {
		t.Fatalf("a refused publish left %+v (%v)", found, ferr)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	p.Attempts, p.Backoff = 3, time.Hour
	if _, err := p.Publish(cctx, summary(img2.String())); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled publish: %v, want context.Canceled", err)
	}
}

// TestPublishedSummaryVerifies: what Publisher attaches is what package
// trust's verificationSummary requirement accepts (the notifier's key,
// the image's digest, the environment, PASSED), and a FAILED summary of
// the same acceptance is refused.
func TestPublishedSummaryVerifies(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, true)
	img := reg.image(t, "checkout")
	k := key(t)
	pub, err := k.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	read := func(_ context.Context, p string) ([]byte, error) {
		if p == "keys/throughline.pub" {
			return []byte(pub), nil
		}
		return nil, os.ErrNotExist
	}
	tp := &v1alpha1.TrustPolicy{Attestations: &v1alpha1.AttestationPolicy{
		VerificationSummary: &v1alpha1.SummaryPolicy{Environment: "staging", PublicKey: "keys/throughline.pub"}}}
	pol, err := trust.Compile(ctx, "production", tp, read)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Verify(ctx, pol, img.String(), trust.Options{}); exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("no summary yet: %v, want a refusal", err)
	}
	failed := summary(img.String())
	failed.Result = "FAILED"
	if _, err := (&Publisher{Signer: k}).Publish(ctx, failed); err != nil {
		t.Fatal(err)
	}
	var r *exitcode.Refusal
	if _, err := trust.Verify(ctx, pol, img.String(), trust.Options{}); !errors.As(err, &r) || r.Rule != trust.RuleSummaryResult {
		t.Fatalf("a FAILED summary: %v, want %s", err, trust.RuleSummaryResult)
	}
	p, err := (&Publisher{Signer: k}).Publish(ctx, summary(img.String()))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := trust.VerifyRecorded(ctx, pol, img.String(), nil, trust.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Items) != 1 || ev.Items[0].Digest != p.Bundle || ev.Items[0].Kind != trust.KindVerificationSummary {
		t.Fatalf("evidence %+v, want the published bundle %s", ev.Items, p.Bundle)
	}
}
