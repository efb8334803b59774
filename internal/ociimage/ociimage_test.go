package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func testSpec() Spec {
	return Spec{
		Binaries: map[string][]byte{
			"amd64": []byte("\x7fELF amd64 binary"),
			"arm64": []byte("\x7fELF arm64 binary"),
		},
		PluginBinaries: map[string][]byte{
			"amd64": []byte("\x7fELF amd64 throughline-cmp"),
			"arm64": []byte("\x7fELF arm64 throughline-cmp"),
		},
		RenderBinaries: map[string][]byte{
			"amd64": []byte("\x7fELF amd64 throughline-cmp-render"),
			"arm64": []byte("\x7fELF arm64 throughline-cmp-render"),
		},
		PluginYAML: []byte("apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\n"),
		CACerts:    []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
		Created:    time.Unix(1764000000, 0).UTC(),
		Source:     "https://github.com/throughline-dev/throughline",
		Revision:   "0123456789abcdef0123456789abcdef01234567",
		Version:    "v0.1.0",
	}
}

// Two assemblies of the same inputs, written to two layouts, give the same
// index digest; any input change gives a different one.
func TestBuildIsReproducible(t *testing.T) {
	ctx := context.Background()
	var digests []v1.Hash
	for range 2 {
		idx, err := Build(testSpec())
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "image")
		if err := WriteLayout(ctx, dir, idx, "v0.1.0"); err != nil {
			t.Fatal(err)
		}
		p, err := layout.FromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		top, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		m, err := top.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 {
			t.Fatalf("layout index.json holds %d manifests, want 1", len(m.Manifests))
		}
		digests = append(digests, m.Manifests[0].Digest)
	}
	if digests[0] != digests[1] {
		t.Fatalf("two builds differ: %s vs %s", digests[0], digests[1])
	}
	t.Logf("index digest: %s", digests[0])

	changed := testSpec()
	changed.Created = changed.Created.Add(time.Second)
	idx, err := Build(changed)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d == digests[0] {
		t.Fatal("a different creation time gave the same digest")
	}
}

func TestImageContents(t *testing.T) {
	spec := testSpec()
	built, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Validate what a registry or a runtime sees: the index read back from
	// the layout, not the in-memory mutate tree.
	dir := filepath.Join(t.TempDir(), "image")
	if err := WriteLayout(context.Background(), dir, built, ""); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := built.Digest()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	if idx, err = idx.ImageIndex(d); err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("invalid index: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(m.Manifests))
	}
	for i, want := range []string{"amd64", "arm64"} {
		desc := m.Manifests[i]
		if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != want {
			t.Fatalf("manifest %d platform %+v, want linux/%s", i, desc.Platform, want)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.User != "999:999" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != BinaryPath {
			t.Errorf("%s: user %q entrypoint %q", want, cf.Config.User, cf.Config.Entrypoint)
		}
		if cf.Architecture != want || cf.OS != "linux" {
			t.Errorf("%s: config platform %s/%s", want, cf.OS, cf.Architecture)
		}
		for k, v := range map[string]string{LabelSource: spec.Source, LabelRevision: spec.Revision, LabelVersion: spec.Version} {
			if cf.Config.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", want, k, cf.Config.Labels[k], v)
			}
		}
		files := readFiles(t, img)
		if string(files["usr/local/bin/throughline"].data) != string(spec.Binaries[want]) {
			t.Errorf("%s: wrong binary", want)
		}
		if files["usr/local/bin/throughline"].hdr.Mode != 0o755 {
			t.Errorf("%s: binary mode %o", want, files["usr/local/bin/throughline"].hdr.Mode)
		}
		if f := files["usr/local/bin/throughline-cmp"]; string(f.data) != string(spec.PluginBinaries[want]) || f.hdr.Mode != 0o755 {
			t.Errorf("%s: throughline-cmp missing, wrong or not executable", want)
		}
		if f := files["usr/local/bin/throughline-cmp-render"]; string(f.data) != string(spec.RenderBinaries[want]) || f.hdr.Mode != 0o755 {
			t.Errorf("%s: throughline-cmp-render missing, wrong or not executable", want)
		}
		if string(files["home/argocd/cmp-server/config/plugin.yaml"].data) != string(spec.PluginYAML) {
			t.Errorf("%s: plugin.yaml missing or wrong", want)
		}
		if string(files["etc/ssl/certs/ca-certificates.crt"].data) != string(spec.CACerts) {
			t.Errorf("%s: CA certificates missing or wrong", want)
		}
		if _, ok := files["bin/sh"]; ok {
			t.Errorf("%s: image has a shell", want)
		}
		for n, f := range files {
			if !f.hdr.ModTime.Equal(spec.Created) {
				t.Errorf("%s: %s mtime %s", want, n, f.hdr.ModTime)
			}
		}
	}
}

type tfile struct {
	hdr  *tar.Header
	data []byte
}

func readFiles(t *testing.T, img v1.Image) map[string]tfile {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tfile{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = tfile{hdr: h, data: b}
		}
		rc.Close()
	}
	return out
}

func TestIsLoopback(t *testing.T) {
	for ref, want := range map[string]bool{
		"127.0.0.1:5000/throughline":   true,
		"localhost:5000/x/throughline": true,
		"[::1]:5000/throughline":       true,
		"ghcr.io/throughline-dev/x":    false,
		"10.0.0.1:5000/throughline":    false,
	} {
		if got := isLoopback(ref); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestWriteLayoutReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "image")
	if err := os.MkdirAll(filepath.Join(dir, "stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	idx, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(context.Background(), dir, idx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stale")); !os.IsNotExist(err) {
		t.Fatalf("stale entry survived: %v", err)
	}
}

// Push over plain HTTP to a loopback registry, then pull the index by digest.
func TestPushLoopback(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	idx, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	want, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, err := Push(ctx, host+"/throughline:v0.1.0", idx)
	if err != nil {
		t.Fatal(err)
	}
	if ref != host+"/throughline@"+want.String() {
		t.Fatalf("pushed ref %q", ref)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(r, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != want {
		t.Fatalf("pulled %s, pushed %s", d, want)
	}
}

// TestBuildNeedsThePluginBinary: plugin.yaml runs throughline-cmp (and it
// renders with throughline-cmp-render without the resident renderer), so an
// image of a platform without it would fail every render in the sidecar.
func TestBuildNeedsThePluginBinary(t *testing.T) {
	spec := testSpec()
	delete(spec.PluginBinaries, "arm64")
	if _, err := Build(spec); err == nil || !strings.Contains(err.Error(), "no throughline-cmp binary for arm64") {
		t.Errorf("Build without arm64's throughline-cmp: %v", err)
	}
	spec = testSpec()
	spec.PluginBinaries["riscv64"] = []byte("\x7fELF")
	if _, err := Build(spec); err == nil {
		t.Error("Build with a throughline-cmp for a platform without throughline succeeded")
	}
	spec = testSpec()
	delete(spec.RenderBinaries, "amd64")
	if _, err := Build(spec); err == nil || !strings.Contains(err.Error(), "no throughline-cmp-render binary for amd64") {
		t.Errorf("Build without amd64's throughline-cmp-render: %v", err)
	}
	spec = testSpec()
	spec.RenderBinaries["riscv64"] = []byte("\x7fELF")
	if _, err := Build(spec); err == nil {
		t.Error("Build with a throughline-cmp-render for a platform without throughline succeeded")
	}
}
