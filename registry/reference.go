package registry

import (
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ParseReference parses an image reference with go-containerregistry's
// grammar: Docker Hub short names expand (nginx is
// index.docker.io/library/nginx:latest), a registry may carry a port and be
// an IPv6 literal ([::1]:5000/app). Plain HTTP (name.Insecure) is allowed
// only for a loopback registry, or for any registry when insecure is true.
func ParseReference(ref string, insecure bool) (name.Reference, error) {
	if ref == "" || strings.TrimSpace(ref) != ref {
		return nil, invalidf("parse", ref, "image reference %q is empty or has surrounding whitespace", ref)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, &Error{Op: "parse", Reference: ref, Kind: ErrInvalid, Err: err}
	}
	if insecure || IsLoopback(r.Context().RegistryStr()) {
		if r, err = name.ParseReference(ref, name.Insecure); err != nil {
			return nil, &Error{Op: "parse", Reference: ref, Kind: ErrInvalid, Err: err}
		}
	}
	return r, nil
}

// IsLoopback reports whether a registry host[:port] is on the loopback
// interface: localhost, 127.0.0.0/8 or ::1 (bracketed with a port).
func IsLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Platform is an os/arch[/variant] of an index child.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
	OSVersion    string `json:"osVersion,omitempty"`
}

// ParsePlatform parses os/arch[/variant].
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return Platform{}, fmt.Errorf("platform %q: want os/arch[/variant]", s)
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

func platformOf(p *v1.Platform) Platform {
	if p == nil {
		return Platform{}
	}
	return Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion}
}

// String is os/arch[/variant], as written by the index.
func (p Platform) String() string {
	if p.OS == "" && p.Architecture == "" {
		return "unknown"
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Normalize returns the platform in its canonical form, as containerd
// compares them: arm64 has the implicit variant v8, arm the implicit v7,
// amd64 the implicit v1, so linux/arm64/v8 and linux/arm64 are the same
// platform.
func (p Platform) Normalize() Platform {
	p.OS = strings.ToLower(p.OS)
	p.Architecture = strings.ToLower(p.Architecture)
	p.Variant = strings.ToLower(p.Variant)
	switch p.Architecture {
	case "aarch64":
		p.Architecture = "arm64"
	case "x86_64", "x86-64":
		p.Architecture = "amd64"
	case "armhf":
		p.Architecture, p.Variant = "arm", "v7"
	case "armel":
		p.Architecture, p.Variant = "arm", "v6"
	}
	switch {
	case p.Architecture == "arm64" && (p.Variant == "v8" || p.Variant == "8"):
		p.Variant = ""
	case p.Architecture == "amd64" && (p.Variant == "v1" || p.Variant == "1"):
		p.Variant = ""
	case p.Architecture == "arm" && (p.Variant == "" || p.Variant == "7"):
		p.Variant = "v7"
	case p.Architecture == "arm" && len(p.Variant) == 1:
		p.Variant = "v" + p.Variant
	}
	return p
}

// Equal reports whether two platforms name the same one after
// normalization (OS version ignored).
func (p Platform) Equal(q Platform) bool {
	a, b := p.Normalize(), q.Normalize()
	return a.OS == b.OS && a.Architecture == b.Architecture && a.Variant == b.Variant
}
