// Package imageid is the imageID match of docs/concepts.md: a container
// status imageID as runtimes report it, compared with the declared digest
// (the exact digest, the child of a declared index for the node's platform,
// or a config digest). The live check (package health) and the evidence
// checks (package evidence) share it; it needs no Kubernetes client.
package imageid

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoImageID is returned by [Parse] for an empty imageID: the
// kubelet has not reported the image yet (the Pod is pending).
var ErrNoImageID = errors.New("no imageID reported yet")

// ID is a container status imageID as a container runtime reports it.
type ID struct {
	// Raw is the imageID as reported.
	Raw string
	// Scheme is the prefix before "://" (docker-pullable, docker), if any.
	Scheme string
	// Repository is the repository before "@", empty for a bare digest.
	Repository string
	// Digest is sha256:<64 lowercase hex>.
	Digest string
}

// Bare reports whether the imageID carries no repository: a bare
// sha256:... or docker://sha256:..., which runtimes use for the image's
// config digest (the "image ID").
func (id ID) Bare() bool { return id.Repository == "" }

// Parse reads the forms runtimes report:
//
//	docker-pullable://repo@sha256:<hex>   (dockershim, cri-dockerd: a repo digest)
//	repo@sha256:<hex>                     (containerd, CRI-O: a repo digest)
//	sha256:<hex>                          (a config digest)
//	docker://sha256:<hex>                 (a config digest)
//
// The digest must be sha256 with 64 lowercase hex digits.
func Parse(s string) (ID, error) {
	id := ID{Raw: s}
	if s == "" {
		return id, ErrNoImageID
	}
	rest := s
	if scheme, after, ok := strings.Cut(s, "://"); ok {
		if scheme == "" || strings.ContainsAny(scheme, "/@:") {
			return id, fmt.Errorf("imageID %q: malformed scheme", s)
		}
		id.Scheme, rest = scheme, after
	}
	digest := rest
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		id.Repository, digest = rest[:i], rest[i+1:]
		if id.Repository == "" || strings.ContainsAny(id.Repository, "@ \t\n") {
			return id, fmt.Errorf("imageID %q: malformed repository", s)
		}
	}
	if !ValidDigest(digest) {
		return id, fmt.Errorf("imageID %q: want a sha256 digest of 64 lowercase hex digits", s)
	}
	id.Digest = digest
	return id, nil
}

// ValidDigest reports whether d is sha256:<64 lowercase hex>.
func ValidDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		c := hex[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
