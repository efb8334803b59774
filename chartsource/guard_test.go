package chartsource_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// TestOCIManifestRedirectRefused: a registry that redirects a manifest
// request to another host gets nothing fetched from it (only blob downloads
// may be redirected, and they are verified by digest).
func TestOCIManifestRedirectRefused(t *testing.T) {
	t.Parallel()
	var foreignHits atomic.Int64
	foreign := httptest.NewServer(counter(http.NotFoundHandler(), &foreignHits))
	t.Cleanup(foreign.Close)
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	var redirect atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if redirect.Load() && strings.Contains(r.URL.Path, "/manifests/") {
			http.Redirect(w, r, foreign.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	dig := pushChart(t, host, "charts", chartTgz(t, "web", "1.0.0", "x"))
	redirect.Store(true)
	_, err := fetcher(t.TempDir()).Fetch(context.Background(),
		chartsource.Entry{Repo: "oci://" + host + "/charts", Name: "web", Version: "1.0.0", Digest: dig})
	wantRefusal(t, err, chartsource.RuleChartForeignHost, foreign.URL[len("http://"):])
	if n := foreignHits.Load(); n != 0 {
		t.Fatalf("%d requests reached the other host", n)
	}
}

// staticKeychain gives one host a user and password.
type staticKeychain struct{ host, user, pass string }

func (k staticKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() == k.host {
		return &authn.Basic{Username: k.user, Password: k.pass}, nil
	}
	return authn.Anonymous, nil
}

// TestHTTPBasicAuth: an HTTP chart repository behind basic auth gets the
// keychain's credentials for its host; without them the fetch fails (exit 1,
// not "not found").
func TestHTTPBasicAuth(t *testing.T) {
	t.Parallel()
	repo := chartfixture.StartRepo(t)
	pkg := chartTgz(t, "web", "1.2.3", "x")
	repo.Publish(t, [][]byte{pkg}, "", "")
	inner := repo.Server.Config.Handler
	repo.Server.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "pw" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	})
	e := chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)}
	host := strings.TrimPrefix(repo.Server.URL, "http://")
	withCreds := fetcher(t.TempDir(), func(o *chartsource.Options) { o.Keychain = staticKeychain{host, "ci", "pw"} })
	if _, err := withCreds.Fetch(context.Background(), e); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	_, err := fetcher(t.TempDir()).Fetch(context.Background(), e)
	if exitcode.Code(err) != exitcode.Internal || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("without credentials: want exit 1 (HTTP 401), got exit %d: %v", exitcode.Code(err), err)
	}
}
