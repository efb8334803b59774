package imageid

import (
	"errors"
	"strings"
	"testing"
)

const (
	hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, scheme, repo, digest string
		err                      string
	}{
		{in: "docker-pullable://ghcr.io/acme/app@sha256:" + hexA, scheme: "docker-pullable", repo: "ghcr.io/acme/app", digest: "sha256:" + hexA},
		{in: "ghcr.io/acme/app@sha256:" + hexA, repo: "ghcr.io/acme/app", digest: "sha256:" + hexA},
		{in: "127.0.0.1:5000/app@sha256:" + hexA, repo: "127.0.0.1:5000/app", digest: "sha256:" + hexA},
		{in: "sha256:" + hexB, digest: "sha256:" + hexB},
		{in: "docker://sha256:" + hexB, scheme: "docker", digest: "sha256:" + hexB},
		{in: "", err: "no imageID"},
		{in: "sha256:" + strings.ToUpper(hexA), err: "64 lowercase hex"},
		{in: "sha256:abc", err: "64 lowercase hex"},
		{in: "sha512:" + hexA + hexA, err: "sha256"},
		{in: "ghcr.io/acme/app:1.0", err: "sha256"},
		{in: "@sha256:" + hexA, err: "malformed repository"},
		{in: "://sha256:" + hexA, err: "malformed scheme"},
		{in: "docker-pullable://app@sha256:" + hexA + "x", err: "64 lowercase hex"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, err := Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) = %+v, %v; want error containing %q", tt.in, id, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Scheme != tt.scheme || id.Repository != tt.repo || id.Digest != tt.digest || id.Bare() != (tt.repo == "") {
				t.Fatalf("Parse(%q) = %+v", tt.in, id)
			}
		})
	}
	if _, err := Parse(""); !errors.Is(err, ErrNoImageID) {
		t.Fatalf("empty imageID: %v, want ErrNoImageID", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"docker-pullable://r/a@sha256:" + hexA, "r@sha256:" + hexA, "sha256:" + hexA, "docker://sha256:" + hexA, "", "a@b@sha256:" + hexA, "x://y://sha256:" + hexA} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			return
		}
		if !ValidDigest(id.Digest) {
			t.Fatalf("Parse(%q) accepted digest %q", s, id.Digest)
		}
		if !strings.HasSuffix(s, id.Digest) {
			t.Fatalf("Parse(%q): digest %q is not the suffix", s, id.Digest)
		}
		// Re-assembling the parts gives the input back.
		re := id.Digest
		if id.Repository != "" {
			re = id.Repository + "@" + re
		}
		if id.Scheme != "" {
			re = id.Scheme + "://" + re
		}
		if re != s {
			t.Fatalf("Parse(%q) = %+v, reassembles to %q", s, id, re)
		}
		again, err := Parse(re)
		if err != nil || again != id {
			t.Fatalf("not stable: %+v, %v", again, err)
		}
	})
}
