package policy

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// DigestAlgorithm is the only digest algorithm a pinned image may use.
const DigestAlgorithm = "sha256"

// Pinned is an image reference pinned by digest.
type Pinned struct {
	// Repository is the full repository name, registry included
	// (index.docker.io/library/nginx for nginx).
	Repository string
	// Tag is the informative tag written before the digest, if any.
	Tag string
	// Digest is sha256:<64 lowercase hex>.
	Digest string
}

// ImageError says why an image reference is not pinned.
type ImageError struct {
	Image  string
	Reason string
}

func (e *ImageError) Error() string {
	return fmt.Sprintf("image %q %s", e.Image, e.Reason)
}

// CheckImage parses ref with go-containerregistry's reference grammar and
// accepts only name[:tag]@sha256:<64 lowercase hex>.
func CheckImage(ref string) (Pinned, error) {
	if strings.TrimSpace(ref) == "" {
		return Pinned{}, &ImageError{Image: ref, Reason: "is empty"}
	}
	if ref != strings.TrimSpace(ref) {
		return Pinned{}, &ImageError{Image: ref, Reason: "has leading or trailing whitespace"}
	}
	base, dig, hasDigest := strings.Cut(ref, "@")
	if !hasDigest {
		return Pinned{}, &ImageError{Image: ref, Reason: unpinnedReason(ref)}
	}
	if alg, _, _ := strings.Cut(dig, ":"); alg != DigestAlgorithm {
		return Pinned{}, &ImageError{Image: ref, Reason: fmt.Sprintf("uses digest algorithm %q; only sha256 is accepted", alg)}
	}
	d, err := name.NewDigest(ref)
	if err != nil {
		return Pinned{}, &ImageError{Image: ref,
			Reason: fmt.Sprintf("has a malformed reference or digest (want name[:tag]@sha256:<64 lowercase hex>): %v", err)}
	}
	p := Pinned{Repository: d.Context().Name(), Digest: d.DigestStr()}
	if t, err := name.NewTag(base); err == nil && strings.Contains(lastPathElement(base), ":") {
		p.Tag = t.TagStr()
	}
	return p, nil
}

func unpinnedReason(ref string) string {
	t, err := name.NewTag(ref)
	if err != nil {
		return fmt.Sprintf("is not a valid image reference: %v", err)
	}
	if !strings.Contains(lastPathElement(ref), ":") {
		return "has no tag and no digest (it floats on :latest); pin it as name[:tag]@sha256:<digest>"
	}
	if t.TagStr() == "latest" {
		return "uses the mutable tag :latest; pin it as name[:tag]@sha256:<digest>"
	}
	return fmt.Sprintf("is pinned by tag %q only; a tag can move, pin it as name:%s@sha256:<digest>", t.TagStr(), t.TagStr())
}

// lastPathElement is the part after the last "/", where a tag lives
// (a ":" before it is a registry port).
func lastPathElement(ref string) string {
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		return ref[i+1:]
	}
	return ref
}
