package chartsource_test

import (
	"errors"
	"io"
	"log"
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

var (
	chartTgz  = chartfixture.Tgz
	sha       = chartfixture.Digest
	counter   = chartfixture.Counter
	pushChart = chartfixture.Push
)

// startRegistry runs go-containerregistry's in-process registry on
// 127.0.0.1 and returns its host:port and request counter.
func startRegistry(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(counter(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))), &n))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

// fetcher is a Fetcher with a cache in dir and no stored credentials.
func fetcher(dir string, opts ...func(*chartsource.Options)) *chartsource.Fetcher {
	o := chartsource.Options{CacheDir: dir, Keychain: authn.NewMultiKeychain()}
	for _, f := range opts {
		f(&o)
	}
	return chartsource.NewFetcher(o)
}

// wantRefusal fails unless err is a refusal of rule whose message holds
// every part.
func wantRefusal(t *testing.T, err error, rule string, parts ...string) {
	t.Helper()
	var r *exitcode.Refusal
	if !errors.As(err, &r) || r.Rule != rule {
		t.Fatalf("want refusal %s, got exit %d: %v", rule, exitcode.Code(err), err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("refusal %s does not name %q: %v", rule, p, err)
		}
	}
}
