package health

import (
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/registry"
)

func dg(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func TestMatchImageID(t *testing.T) {
	index := &registry.Descriptor{Digest: dg('1'), MediaType: "application/vnd.oci.image.index.v1+json", Children: []registry.Child{
		{Platform: registry.Platform{OS: "linux", Architecture: "amd64"}, Digest: dg('2'), ConfigDigest: dg('3')},
		{Platform: registry.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, Digest: dg('4'), ConfigDigest: dg('5')},
	}}
	manifest := &registry.Descriptor{Digest: dg('6'), MediaType: "application/vnd.oci.image.manifest.v1+json", ConfigDigest: dg('7')}
	amd64 := registry.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := registry.Platform{OS: "linux", Architecture: "arm64"}
	down := &registry.Error{Op: "get", Reference: "r", Kind: registry.ErrUnreachable, Err: errors.New("connection refused")}
	tests := []struct {
		name string
		in   MatchInput
		want Outcome
		kind v1alpha1.MatchKind
		msg  string
	}{
		{"exact docker-pullable", MatchInput{Declared: dg('1'), ImageID: "docker-pullable://r/app@" + dg('1')}, Verified, v1alpha1.MatchExact, ""},
		{"exact repo digest, registry down", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('1'), ResolveErr: down}, Verified, v1alpha1.MatchExact, ""},
		{"index child on arm64 node (v8 implicit)", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('4'), Resolved: index, Platform: arm64, HasPlatform: true}, Verified, v1alpha1.MatchIndexChild, ""},
		{"index child on amd64", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('2'), Resolved: index, Platform: amd64, HasPlatform: true}, Verified, v1alpha1.MatchIndexChild, ""},
		{"bare config digest of the arm64 child", MatchInput{Declared: dg('1'), ImageID: dg('5'), Resolved: index, Platform: arm64, HasPlatform: true}, Verified, v1alpha1.MatchConfigDigest, ""},
		{"docker:// config digest", MatchInput{Declared: dg('1'), ImageID: "docker://" + dg('3'), Resolved: index, Platform: amd64, HasPlatform: true}, Verified, v1alpha1.MatchConfigDigest, ""},
		{"config digest of a single manifest", MatchInput{Declared: dg('6'), ImageID: dg('7'), Resolved: manifest, Platform: amd64, HasPlatform: true}, Verified, v1alpha1.MatchConfigDigest, ""},
		{"amd64 child on an arm64 node", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('2'), Resolved: index, Platform: arm64, HasPlatform: true}, Mismatch, "", "node is linux/arm64"},
		{"wrong digest", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('9'), Resolved: index, Platform: amd64, HasPlatform: true}, Mismatch, "", "none of its 2 children"},
		{"wrong digest, single manifest", MatchInput{Declared: dg('6'), ImageID: dg('9'), Resolved: manifest, Platform: amd64, HasPlatform: true}, Mismatch, "", "neither"},
		{"no child for the platform", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('2'), Resolved: index, Platform: registry.Platform{OS: "linux", Architecture: "s390x"}, HasPlatform: true}, Mismatch, "", "no child for the node's platform linux/s390x"},
		{"node without platform labels", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('4'), Resolved: index}, Unverifiable, "", "no kubernetes.io/os"},
		{"node without platform labels, wrong digest", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('9'), Resolved: index}, Mismatch, "", ""},
		{"registry down", MatchInput{Declared: dg('1'), ImageID: "r/app@" + dg('4'), ResolveErr: down, Platform: arm64, HasPlatform: true}, Unverifiable, "", "registry unreachable"},
		{"no imageID yet", MatchInput{Declared: dg('1'), ImageID: ""}, Pending, "", "no imageID"},
		{"malformed imageID", MatchInput{Declared: dg('1'), ImageID: "r/app:latest"}, Mismatch, "", "sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := MatchImageID(tt.in)
			if m.Outcome != tt.want || m.Kind != tt.kind || !strings.Contains(m.Message, tt.msg) {
				t.Fatalf("MatchImageID = %+v; want %s %q containing %q", m, tt.want, tt.kind, tt.msg)
			}
		})
	}
}

func TestWorse(t *testing.T) {
	if Worse(Verified, Pending) != Pending || Worse(Mismatch, Unverifiable) != Mismatch || Worse(Unverifiable, Pending) != Unverifiable {
		t.Fatal("Worse order")
	}
	if NeedsRegistry(dg('1'), "r@"+dg('1')) || !NeedsRegistry(dg('1'), dg('2')) || NeedsRegistry(dg('1'), "") {
		t.Fatal("NeedsRegistry")
	}
}
