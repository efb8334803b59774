// Package chartfixture makes Helm charts for tests: chart packages, pushes
// to an OCI registry with Helm's own registry client, and an HTTP chart
// repository on 127.0.0.1 whose index.yaml is made with Helm's repo package.
// Only tests import it (it links Helm's SDK).
package chartfixture

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	helmrepo "helm.sh/helm/v4/pkg/repo/v1"
	sigyaml "sigs.k8s.io/yaml"
)

// Tgz is a chart package: name/Chart.yaml and one ConfigMap template; note
// makes two packages of one version differ.
func Tgz(t testing.TB, name, version, note string) []byte {
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

// Digest is sha256:<hex> of data.
func Digest(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Counter counts the requests h answers into n.
func Counter(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// Push pushes a chart package with Helm's own registry client (plain HTTP:
// a registry on 127.0.0.1; opts may add helmregistry.ClientOptBasicAuth) to
// host/path/<name>:<version> and returns the manifest digest.
func Push(t testing.TB, host, path string, tgz []byte, opts ...helmregistry.ClientOption) string {
	t.Helper()
	opts = append([]helmregistry.ClientOption{helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard),
		helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json"))}, opts...)
	c, err := helmregistry.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	meta := Meta(t, tgz)
	res, err := c.Push(tgz, fmt.Sprintf("%s/%s/%s:%s", host, path, meta.Name, meta.Version))
	if err != nil {
		t.Fatalf("helm push: %v", err)
	}
	return res.Manifest.Digest
}

// Meta reads the Chart.yaml of a package.
func Meta(t testing.TB, tgz []byte) *helmchart.Metadata {
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
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			var m helmchart.Metadata
			if err := sigyaml.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			return &m
		}
	}
}

// Repo is an HTTP chart repository on 127.0.0.1: index.yaml made with
// Helm's repo package under /stable/, packages under /stable/charts/.
type Repo struct {
	Server *httptest.Server
	// Hits counts the requests answered.
	Hits  atomic.Int64
	mu    sync.Mutex
	files map[string][]byte
}

// StartRepo starts an empty repository, stopped at the test's end.
func StartRepo(t testing.TB) *Repo {
	t.Helper()
	r := &Repo{files: map[string][]byte{}}
	r.Server = httptest.NewServer(Counter(http.HandlerFunc(r.serve), &r.Hits))
	t.Cleanup(r.Server.Close)
	return r
}

func (r *Repo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	body, ok := r.files[req.URL.Path]
	r.mu.Unlock()
	if !ok {
		http.NotFound(w, req)
		return
	}
	_, _ = w.Write(body)
}

// URL is the repository URL (http://127.0.0.1:port/stable).
func (r *Repo) URL() string { return r.Server.URL + "/stable" }

// Publish serves the packages and an index.yaml naming them (relative
// urls); url, when set, replaces the url of every entry, indexDigest, when
// set, its digest.
func (r *Repo) Publish(t testing.TB, pkgs [][]byte, url, indexDigest string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files["/stable/index.yaml"] = r.index(t, pkgs, url, indexDigest)
}

func (r *Repo) index(t testing.TB, pkgs [][]byte, url, indexDigest string) []byte {
	idx := helmrepo.NewIndexFile()
	for _, p := range pkgs {
		m := Meta(t, p)
		file := fmt.Sprintf("%s-%s.tgz", m.Name, m.Version)
		r.files["/stable/charts/"+file] = p
		dig := strings.TrimPrefix(Digest(p), "sha256:")
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
	return data
}

// IndexFor is an index.yaml naming pkgs (the packages are not served).
func IndexFor(t testing.TB, pkgs ...[]byte) []byte {
	t.Helper()
	r := &Repo{files: map[string][]byte{}}
	return r.index(t, pkgs, "", "")
}

// Set serves body at path (replacing what was there).
func (r *Repo) Set(path string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[path] = body
}
