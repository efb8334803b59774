package imageid

import (
	"errors"
	"fmt"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/registry"
)

// The outcomes of [Compare], as the API's status carries them.
const (
	verified     = v1alpha1.OutcomeVerified
	pending      = v1alpha1.OutcomePending
	unverifiable = v1alpha1.OutcomeUnverifiable
	mismatch     = v1alpha1.OutcomeMismatch
)

// Match is the verdict on one imageID.
type Match struct {
	Outcome v1alpha1.Outcome
	Kind    v1alpha1.MatchKind // set when Verified
	// Platform is the child's platform for v1alpha1.MatchIndexChild and
	// v1alpha1.MatchConfigDigest of an index.
	Platform string
	Message  string
}

// Input is what [Compare] compares.
type Input struct {
	// Declared is the declared digest (sha256:...).
	Declared string
	// ImageID is the runtime's imageID.
	ImageID string
	// Resolved is what the registry says the declared digest is; nil with
	// ResolveErr when it could not be asked, nil without it when the exact
	// match made asking unnecessary.
	Resolved   *registry.Descriptor
	ResolveErr error
	// Platform is the node's platform; HasPlatform is false when the Node
	// carries no kubernetes.io/os and kubernetes.io/arch labels.
	Platform    registry.Platform
	HasPlatform bool
}

// NeedsRegistry reports whether matching imageID against declared needs
// the registry (anything but an exact digest match does).
func NeedsRegistry(declared, imageID string) bool {
	id, err := Parse(imageID)
	return err == nil && id.Digest != declared
}

// Compare applies the imageID match of docs/concepts.md: strip the scheme and the repository;
// accept the exact digest, or the child of the declared index for the node's
// platform, or a config digest equal to that child's (or the declared
// manifest's) config. Anything else is a mismatch; a declared digest that
// could not be resolved is Unverifiable, never Verified.
func Compare(in Input) Match {
	id, err := Parse(in.ImageID)
	if errors.Is(err, ErrNoImageID) {
		return Match{Outcome: pending, Message: "no imageID reported yet"}
	}
	if err != nil {
		return Match{Outcome: mismatch, Message: err.Error()}
	}
	if id.Digest == in.Declared {
		return Match{Outcome: verified, Kind: v1alpha1.MatchExact}
	}
	if in.Resolved == nil {
		msg := fmt.Sprintf("imageID %s is not the declared %s, and the declared digest could not be resolved", in.ImageID, in.Declared)
		if in.ResolveErr != nil {
			msg += ": " + in.ResolveErr.Error()
		}
		return Match{Outcome: unverifiable, Message: msg}
	}
	d := in.Resolved
	if !d.IsIndex() {
		if d.ConfigDigest != "" && id.Digest == d.ConfigDigest {
			return Match{Outcome: verified, Kind: v1alpha1.MatchConfigDigest}
		}
		return Match{Outcome: mismatch, Message: fmt.Sprintf("imageID %s is neither the declared manifest %s nor its config %s",
			in.ImageID, in.Declared, orNone(d.ConfigDigest))}
	}
	// An index: which child (if any) does the imageID name?
	var hit *registry.Child
	var kind v1alpha1.MatchKind
	for i := range d.Children {
		c := &d.Children[i]
		switch id.Digest {
		case c.Digest:
			hit, kind = c, v1alpha1.MatchIndexChild
		case c.ConfigDigest:
			hit, kind = c, v1alpha1.MatchConfigDigest
		default:
			continue
		}
		break
	}
	if hit == nil {
		return Match{Outcome: mismatch, Message: fmt.Sprintf("imageID %s is not the declared index %s, none of its %d children and none of their configs",
			in.ImageID, in.Declared, len(d.Children))}
	}
	if !in.HasPlatform {
		return Match{Outcome: unverifiable, Platform: hit.Platform.String(), Message: fmt.Sprintf("imageID %s is the %s child of the declared index %s, "+
			"but the node has no kubernetes.io/os and kubernetes.io/arch labels to say which child it should run", in.ImageID, hit.Platform, in.Declared)}
	}
	want, ok := d.ChildFor(in.Platform)
	if !ok {
		return Match{Outcome: mismatch, Platform: hit.Platform.String(), Message: fmt.Sprintf(
			"the declared index %s has no child for the node's platform %s (imageID %s is its %s child)", in.Declared, in.Platform, in.ImageID, hit.Platform)}
	}
	if want.Digest != hit.Digest {
		return Match{Outcome: mismatch, Platform: hit.Platform.String(), Message: fmt.Sprintf(
			"imageID %s is the %s child of the declared index %s, but the node is %s (want %s)",
			in.ImageID, hit.Platform, in.Declared, in.Platform, want.Digest)}
	}
	return Match{Outcome: verified, Kind: kind, Platform: hit.Platform.String()}
}

func orNone(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
