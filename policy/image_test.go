package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/policy"
)

const hex64 = "9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"

func TestCheckImage(t *testing.T) {
	t.Parallel()
	msgs := golden.ErrorLines(t, "testdata/check-image.golden", 14)
	for _, tc := range []struct {
		image      string
		repository string // for accepted images
		tag        string
		reason     string // substring of the refusal
	}{
		{image: "nginx@sha256:" + hex64, repository: "index.docker.io/library/nginx"},
		{image: "nginx:1.27@sha256:" + hex64, repository: "index.docker.io/library/nginx", tag: "1.27"},
		{image: "ghcr.io/org/app:v1.2.3@sha256:" + hex64, repository: "ghcr.io/org/app", tag: "v1.2.3"},
		{image: "localhost:5000/app@sha256:" + hex64, repository: "localhost:5000/app"},
		{image: "localhost:5000/team/app:2@sha256:" + hex64, repository: "localhost:5000/team/app", tag: "2"},
		{image: "nginx", reason: "no tag and no digest"},
		{image: "nginx:latest", reason: "mutable tag :latest"},
		{image: "nginx:1.27", reason: `pinned by tag "1.27" only`},
		{image: "localhost:5000/app", reason: "no tag and no digest"},
		{image: "ghcr.io/org/app:1.0@sha256:" + hex64[:63], reason: "malformed"},
		{image: "ghcr.io/org/app@sha256:" + strings.ToUpper(hex64), reason: "malformed"},
		{image: "ghcr.io/org/app@sha512:" + hex64 + hex64, reason: `algorithm "sha512"`},
		{image: "ghcr.io/org/app@md5:abc", reason: `algorithm "md5"`},
		{image: "ghcr.io/org/app@" + hex64, reason: "algorithm"},
		{image: "ghcr.io/org/app@sha256:" + hex64 + "@sha256:" + hex64, reason: "malformed"},
		{image: "Ghcr.io/Org/App@sha256:" + hex64, reason: "malformed"},
		{image: "", reason: "empty"},
		{image: " nginx@sha256:" + hex64, reason: "whitespace"},
		{image: "nginx:bad tag", reason: "not a valid image reference"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			p, err := policy.CheckImage(tc.image)
			if tc.reason != "" {
				var ie *policy.ImageError
				if !errors.As(err, &ie) {
					t.Fatalf("CheckImage(%q) = %+v, %v; want an ImageError", tc.image, p, err)
				}
				if ie.Image != tc.image {
					t.Errorf("error %q names image %q, want %q", err, ie.Image, tc.image)
				}
				// What it says ([...]): testdata/check-image.golden.
				msgs(strings.ReplaceAll(tc.image, hex64, "HEX")+" ["+tc.reason+"]", errors.New(strings.ReplaceAll(err.Error(), hex64, "HEX")))
				return
			}
			if err != nil {
				t.Fatalf("CheckImage(%q): %v", tc.image, err)
			}
			if p.Repository != tc.repository || p.Tag != tc.tag || p.Digest != "sha256:"+hex64 {
				t.Errorf("CheckImage(%q) = %+v", tc.image, p)
			}
		})
	}
}

// FuzzCheckImage: image references come from untrusted manifests. Never
// panic; anything accepted is pinned by a sha256 digest that appears in the
// reference.
func FuzzCheckImage(f *testing.F) {
	for _, s := range []string{"nginx", "nginx:1.27@sha256:" + hex64, "a/b:c@sha256:" + hex64, "@", "x@sha256:", "::", "localhost:5000/a@sha256:" + hex64} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		p, err := policy.CheckImage(ref)
		if err != nil {
			var ie *policy.ImageError
			if !errors.As(err, &ie) {
				t.Fatalf("not an ImageError: %v", err)
			}
			return
		}
		if len(p.Digest) != len("sha256:")+64 || !strings.HasPrefix(p.Digest, "sha256:") || !strings.HasSuffix(ref, p.Digest) {
			t.Fatalf("accepted %q with digest %q", ref, p.Digest)
		}
		for _, c := range p.Digest[len("sha256:"):] {
			if !strings.ContainsRune("0123456789abcdef", c) {
				t.Fatalf("accepted %q with a non-lowercase-hex digest", ref)
			}
		}
	})
}
