package chartsource_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	helmrepo "helm.sh/helm/v4/pkg/repo/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
)

// chartTgz is a chart package: name/Chart.yaml and one template; note
// makes two packages of one version differ.
func chartTgz(t testing.TB, name, version, note string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	files := []struct{ path, body string }{
		{name + "/Chart.yaml", fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ndescription: %s\n", name, version, note)},
		{name + "/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  note: " + note + "\n"},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.path, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// counter counts the requests a test server answers.
func counter(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// startRegistry runs go-containerregistry's in-process registry on
// 127.0.0.1 and returns its host:port and request counter.
func startRegistry(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(counter(ggcrregistry.New(ggcrregistry.Logger(nopLogger())), &n))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

// pushChart pushes a chart package with Helm's own registry client to
// host/path/<name>:<version> and returns the manifest digest.
func pushChart(t *testing.T, host, path string, tgz []byte) string {
	t.Helper()
	c, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard),
		helmregistry.ClientOptCredentialsFile(t.TempDir()+"/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	meta := chartMeta(t, tgz)
	res, err := c.Push(tgz, fmt.Sprintf("%s/%s/%s:%s", host, path, meta.Name, meta.Version))
	if err != nil {
		t.Fatalf("helm push: %v", err)
	}
	return res.Manifest.Digest
}

// chartMeta reads Chart.yaml of a package made by chartTgz.
func chartMeta(t testing.TB, tgz []byte) *helmchart.Metadata {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no Chart.yaml: %v", err)
		}
		if strings.HasSuffix(h.Name, "/Chart.yaml") {
			data, _ := io.ReadAll(tr)
			var m helmchart.Metadata
			if err := sigyaml.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			return &m
		}
	}
}

// chartRepo is an HTTP chart repository on 127.0.0.1: index.yaml made with
// Helm's repo package, packages under /charts/.
type chartRepo struct {
	srv   *httptest.Server
	hits  atomic.Int64
	mu    sync.Mutex
	files map[string][]byte // path -> body
}

func startChartRepo(t *testing.T) *chartRepo {
	t.Helper()
	r := &chartRepo{files: map[string][]byte{}}
	r.srv = httptest.NewServer(counter(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		body, ok := r.files[req.URL.Path]
		r.mu.Unlock()
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(body)
	}), &r.hits))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the repository URL (http://127.0.0.1:port/stable).
func (r *chartRepo) URL() string { return r.srv.URL + "/stable" }

// publish serves the packages and an index.yaml naming them; url, when
// set, replaces the url of every entry; indexDigest, when set, the digest.
func (r *chartRepo) publish(t *testing.T, pkgs [][]byte, url, indexDigest string) {
	t.Helper()
	idx := helmrepo.NewIndexFile()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pkgs {
		m := chartMeta(t, p)
		file := fmt.Sprintf("%s-%s.tgz", m.Name, m.Version)
		r.files["/stable/charts/"+file] = p
		dig := strings.TrimPrefix(sha(p), "sha256:")
		if indexDigest != "" {
			dig = indexDigest
		}
		if err := idx.MustAdd(m, "charts/"+file, "", dig); err != nil {
			t.Fatal(err)
		}
		if url != "" {
			idx.Entries[m.Name][len(idx.Entries[m.Name])-1].URLs = []string{url}
		}
	}
	data, err := sigyaml.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	r.files["/stable/index.yaml"] = data
}

func (r *chartRepo) set(path string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[path] = body
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

func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }
