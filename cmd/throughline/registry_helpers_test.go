package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// startRegistry starts go-containerregistry's in-process registry on
// 127.0.0.1 and isolates the test from the user's Docker config and caches.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv(EnvCacheDir, t.TempDir())
	return strings.TrimPrefix(srv.URL, "http://")
}

func startFaultyRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(wrap(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv(EnvCacheDir, t.TempDir())
	return strings.TrimPrefix(srv.URL, "http://")
}

func pushRandomImage(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d.String()
}

// pushMultiArch pushes an OCI index with linux/amd64 and linux/arm64/v8
// children and returns the index digest and the children's digests.
func pushMultiArch(t *testing.T, ref string) (string, []string) {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var children []string
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		children = append(children, d.String())
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return d.String(), children
}

// writeTree writes files (relative path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
