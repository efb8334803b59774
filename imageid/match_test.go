package imageid

import (
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/registry"
)

func dg(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func TestCompare(t *testing.T) {
	t.Parallel()
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
		in   Input
		want v1alpha1.Outcome
		kind v1alpha1.MatchKind
		msg  string
	}{
		{"exact docker-pullable", Input{Declared: dg('1'), ImageID: "docker-pullable://r/app@" + dg('1')}, v1alpha1.OutcomeVerified, v1alpha1.MatchExact, ""},
		{"exact repo digest, registry down", Input{Declared: dg('1'), ImageID: "r/app@" + dg('1'), ResolveErr: down}, v1alpha1.OutcomeVerified, v1alpha1.MatchExact, ""},
		{"index child on arm64 node (v8 implicit)", Input{Declared: dg('1'), ImageID: "r/app@" + dg('4'), Resolved: index, Platform: arm64, HasPlatform: true}, v1alpha1.OutcomeVerified, v1alpha1.MatchIndexChild, ""},
		{"index child on amd64", Input{Declared: dg('1'), ImageID: "r/app@" + dg('2'), Resolved: index, Platform: amd64, HasPlatform: true}, v1alpha1.OutcomeVerified, v1alpha1.MatchIndexChild, ""},
		{"bare config digest of the arm64 child", Input{Declared: dg('1'), ImageID: dg('5'), Resolved: index, Platform: arm64, HasPlatform: true}, v1alpha1.OutcomeVerified, v1alpha1.MatchConfigDigest, ""},
		{"docker:// config digest", Input{Declared: dg('1'), ImageID: "docker://" + dg('3'), Resolved: index, Platform: amd64, HasPlatform: true}, v1alpha1.OutcomeVerified, v1alpha1.MatchConfigDigest, ""},
		{"config digest of a single manifest", Input{Declared: dg('6'), ImageID: dg('7'), Resolved: manifest, Platform: amd64, HasPlatform: true}, v1alpha1.OutcomeVerified, v1alpha1.MatchConfigDigest, ""},
		{"amd64 child on an arm64 node", Input{Declared: dg('1'), ImageID: "r/app@" + dg('2'), Resolved: index, Platform: arm64, HasPlatform: true}, v1alpha1.OutcomeMismatch, "", "node is linux/arm64"},
		{"wrong digest", Input{Declared: dg('1'), ImageID: "r/app@" + dg('9'), Resolved: index, Platform: amd64, HasPlatform: true}, v1alpha1.OutcomeMismatch, "", "none of its 2 children"},
		{"wrong digest, single manifest", Input{Declared: dg('6'), ImageID: dg('9'), Resolved: manifest, Platform: amd64, HasPlatform: true}, v1alpha1.OutcomeMismatch, "", "neither"},
		{"no child for the platform", Input{Declared: dg('1'), ImageID: "r/app@" + dg('2'), Resolved: index, Platform: registry.Platform{OS: "linux", Architecture: "s390x"}, HasPlatform: true}, v1alpha1.OutcomeMismatch, "", "no child for the node's platform linux/s390x"},
		{"node without platform labels", Input{Declared: dg('1'), ImageID: "r/app@" + dg('4'), Resolved: index}, v1alpha1.OutcomeUnverifiable, "", "no kubernetes.io/os"},
		{"node without platform labels, wrong digest", Input{Declared: dg('1'), ImageID: "r/app@" + dg('9'), Resolved: index}, v1alpha1.OutcomeMismatch, "", ""},
		{"registry down", Input{Declared: dg('1'), ImageID: "r/app@" + dg('4'), ResolveErr: down, Platform: arm64, HasPlatform: true}, v1alpha1.OutcomeUnverifiable, "", "registry unreachable"},
		{"no imageID yet", Input{Declared: dg('1'), ImageID: ""}, v1alpha1.OutcomePending, "", "no imageID"},
		{"malformed imageID", Input{Declared: dg('1'), ImageID: "r/app:latest"}, v1alpha1.OutcomeMismatch, "", "sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Compare(tt.in)
			if m.Outcome != tt.want || m.Kind != tt.kind || !strings.Contains(m.Message, tt.msg) {
				t.Fatalf("MatchImageID = %+v; want %s %q containing %q", m, tt.want, tt.kind, tt.msg)
			}
		})
	}
}

func TestNeedsRegistry(t *testing.T) {
	t.Parallel()
	if NeedsRegistry(dg('1'), "r@"+dg('1')) || !NeedsRegistry(dg('1'), dg('2')) || NeedsRegistry(dg('1'), "") {
		t.Fatal("NeedsRegistry")
	}
}
