//go:build e2e

package smoke

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestRegistry: a multi-arch index pushed to the real registry resolves by
// tag to the index digest and per platform to its child manifest; with auth
// on, the right password is needed.
func TestRegistry(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testenv.RegistryOptions
	}{
		{"anonymous", testenv.RegistryOptions{}},
		{"basic-auth", testenv.RegistryOptions{Username: "ci", Password: "s3cr3t-pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := testenv.StartRegistry(t, tc.opts)
			ctx := testContext(t, time.Minute)
			auth := authn.Anonymous
			if tc.opts.Username != "" {
				auth = &authn.Basic{Username: tc.opts.Username, Password: tc.opts.Password}
			}
			opt := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth)}

			ref, err := name.ParseReference(reg.Host+"/demo/app:v1", name.Insecure)
			must(t, err)
			idx := testenv.MultiArchIndex(t)
			children := idx.Manifests
			must(t, remote.WriteIndex(ref, idx.Index, opt...))
			want, err := v1.NewHash(idx.Digest)
			must(t, err)

			// Tag -> index digest, from the registry.
			desc, err := remote.Head(ref, opt...)
			must(t, err)
			if desc.Digest != want || desc.MediaType != types.OCIImageIndex {
				t.Fatalf("HEAD %s = %s %s, want %s %s", ref, desc.Digest, desc.MediaType, want, types.OCIImageIndex)
			}
			// Platform -> child manifest digest.
			for _, p := range testenv.Platforms {
				img, err := remote.Image(ref, append(opt, remote.WithPlatform(p))...)
				must(t, err)
				got, err := img.Digest()
				must(t, err)
				if got.String() != children[p.String()] {
					t.Fatalf("%s for %s = %s, want child %s", ref, p, got, children[p.String()])
				}
				cf, err := img.ConfigFile()
				must(t, err)
				if cf.Architecture != p.Architecture || cf.Variant != p.Variant {
					t.Fatalf("config of %s child: %s/%s, want %s", p, cf.Architecture, cf.Variant, p)
				}
			}
			// The index as stored lists exactly the two children.
			ri, err := remote.Index(ref, opt...)
			must(t, err)
			im, err := ri.IndexManifest()
			must(t, err)
			if len(im.Manifests) != len(testenv.Platforms) {
				t.Fatalf("index has %d manifests, want %d", len(im.Manifests), len(testenv.Platforms))
			}
			// A digest reference of a child resolves too; delete is enabled.
			child := ref.Context().Digest(children["linux/arm64/v8"])
			if _, err := remote.Head(child, opt...); err != nil {
				t.Fatalf("HEAD %s: %v", child, err)
			}
			must(t, remote.Delete(ref.Context().Digest(want.String()), opt...))
			if _, err := remote.Head(ref, opt...); !isStatus(err, http.StatusNotFound) {
				t.Fatalf("HEAD %s after delete: got %v, want 404", ref, err)
			}

			if tc.opts.Username != "" {
				for _, bad := range []authn.Authenticator{
					&authn.Basic{Username: tc.opts.Username, Password: "wrong"},
					authn.Anonymous,
				} {
					_, err := remote.Head(child, remote.WithContext(ctx), remote.WithAuth(bad))
					if !isStatus(err, http.StatusUnauthorized) {
						t.Fatalf("HEAD %s with bad credentials: got %v, want 401", child, err)
					}
				}
			}
			t.Logf("index %s: amd64 %s, arm64/v8 %s", want, children["linux/amd64"], children["linux/arm64/v8"])
		})
	}
}

func isStatus(err error, code int) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == code
}
