package testenv

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platforms are the platforms of MultiArchIndex: what a multi-arch release
// of a Go service usually carries.
var Platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// Index is a multi-arch OCI image index built for a test.
type Index struct {
	Index     v1.ImageIndex
	Digest    string            // sha256:... of the index
	Manifests map[string]string // platform (linux/arm64/v8) -> child manifest digest
	Configs   map[string]string // platform -> child config digest (what a node's imageID may show)
}

// MultiArchIndex builds an OCI image index with one random image per
// platform in Platforms, the platform written both on the index descriptor
// and in the image config, as buildx writes them. Each call gives new
// digests.
func MultiArchIndex(t testing.TB) Index {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	out := Index{Manifests: map[string]string{}, Configs: map[string]string{}}
	for _, p := range Platforms {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatalf("building a random image: %v", err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatalf("reading the random image's config: %v", err)
		}
		cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatalf("setting the platform %s: %v", p, err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatalf("digest of the %s image: %v", p, err)
		}
		c, err := img.ConfigName()
		if err != nil {
			t.Fatalf("config digest of the %s image: %v", p, err)
		}
		out.Manifests[p.String()], out.Configs[p.String()] = d.String(), c.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatalf("digest of the index: %v", err)
	}
	out.Index, out.Digest = idx, d.String()
	return out
}

// Push writes the index to ref (host/repo:tag; plain HTTP allowed, the
// harness's registries listen on loopback).
func (i Index) Push(ctx context.Context, t testing.TB, ref string, opts ...remote.Option) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatalf("parsing %s: %v", ref, err)
	}
	if err := remote.WriteIndex(r, i.Index, append([]remote.Option{remote.WithContext(ctx)}, opts...)...); err != nil {
		t.Fatalf("pushing the index to %s: %v", ref, err)
	}
}
