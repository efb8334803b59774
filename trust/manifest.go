package trust

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/registry"
)

// EvidenceArtifactType is the artifactType of an evidence manifest: the
// OCI 1.1 artifact, a referrer of the image, whose layers are the
// evidence's bundles, each embedded in its descriptor (the OCI descriptor
// data field), so that one manifest request returns them all.
const EvidenceArtifactType = "application/vnd.throughline.evidence.v1+json"

// emptyConfig is the OCI empty descriptor's content and media type (an
// artifact's config).
var emptyConfig = []byte("{}")

const emptyMediaType types.MediaType = "application/vnd.oci.empty.v1+json"

// maxEmbedded caps what a manifest's layers embed (distribution's manifest
// limit is 4 MiB).
const maxEmbedded = 3 << 20

// Attach pushes bundles as one OCI 1.1 artifact manifest of artifactType
// (BundleMediaType for a Sigstore bundle referrer, EvidenceArtifactType for
// an evidence manifest) whose subject is image (a digest reference): each
// bundle is a layer blob of media type BundleMediaType, its descriptor
// embedding it (data) when they fit in maxEmbedded. On a registry without
// the referrers API, go-containerregistry adds the manifest to the
// referrers tag sha256-<hex>. It returns the manifest's digest.
func Attach(ctx context.Context, image, artifactType string, annotations map[string]string, bundles [][]byte,
	opts []remote.Option) (string, error) {
	img, err := parseImage(image)
	if err != nil {
		return "", err
	}
	opts, err = pusher(ctx, opts)
	if err != nil {
		return "", err
	}
	sub, err := remote.Head(img, opts...)
	if err != nil {
		return "", fmt.Errorf("reading the manifest of %s: %w", img, registry.Wrap("head", img.String(), err))
	}
	raw, err := artifact(artifactType, sub, annotations, bundles)
	if err != nil {
		return "", fmt.Errorf("attaching evidence to %s: %w", img, err)
	}
	if err := pushBlobs(img.Context(), bundles, opts); err != nil {
		return "", err
	}
	d := fmt.Sprintf("sha256:%x", sha256.Sum256(raw))
	if err := remote.Put(img.Context().Digest(d), rawManifest(raw), opts...); err != nil {
		return "", fmt.Errorf("pushing the evidence manifest %s of %s: %w", d, img, err)
	}
	return d, nil
}

// AttachTag pushes bundles as the layers (each embedded in its descriptor)
// of the cosign tag sha256-<hex><suffix> of image (suffix .sig or .att),
// replacing what it held, as cosign does.
func AttachTag(ctx context.Context, image, suffix string, bundles [][]byte, opts []remote.Option) error {
	img, err := parseImage(image)
	if err != nil {
		return err
	}
	if opts, err = pusher(ctx, opts); err != nil {
		return err
	}
	raw, err := artifact("", nil, nil, bundles)
	if err != nil {
		return fmt.Errorf("attaching evidence to %s: %w", img, err)
	}
	if err := pushBlobs(img.Context(), bundles, opts); err != nil {
		return err
	}
	tag := img.Context().Tag(cosignTag(img, suffix))
	if err := remote.Put(tag, rawManifest(raw), opts...); err != nil {
		return fmt.Errorf("pushing %s: %w", tag, err)
	}
	return nil
}

// pusher adds ctx and one shared pusher to opts: one authentication
// handshake for every request of an attachment.
func pusher(ctx context.Context, opts []remote.Option) ([]remote.Option, error) {
	opts = append(slices.Clip(opts), remote.WithContext(ctx))
	p, err := remote.NewPusher(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry options: %w", err)
	}
	return append(opts, remote.Reuse(p)), nil
}

// cosignTag is the cosign tag of img with suffix: sha256-<hex><suffix>.
func cosignTag(img name.Digest, suffix string) string {
	return img.DigestStr()[:len("sha256")] + "-" + img.DigestStr()[len("sha256:"):] + suffix
}

// pushBlobs uploads the empty config and every bundle as blobs of repo
// (a registry that ignores the data field still serves each by digest).
func pushBlobs(repo name.Repository, bundles [][]byte, opts []remote.Option) error {
	blobs := append([][]byte{emptyConfig}, bundles...)
	for i, b := range blobs {
		mt := types.MediaType(BundleMediaType)
		if i == 0 {
			mt = emptyMediaType
		}
		if err := remote.WriteLayer(repo, static.NewLayer(b, mt), opts...); err != nil {
			return fmt.Errorf("pushing blob sha256:%x to %s: %w", sha256.Sum256(b), repo, err)
		}
	}
	return nil
}

// artifact is the OCI image manifest of an artifact of artifactType with
// bundles as its layers, embedded while they fit.
func artifact(artifactType string, subject *v1.Descriptor, annotations map[string]string, bundles [][]byte) ([]byte, error) {
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        describe(emptyConfig, emptyMediaType),
		Subject:       subject,
		Annotations:   annotations,
	}
	total := 0
	for _, b := range bundles {
		d := describe(b, types.MediaType(BundleMediaType))
		if total += len(b); total <= maxEmbedded {
			d.Data = b
		}
		m.Layers = append(m.Layers, d)
	}
	raw, err := json.Marshal(struct {
		v1.Manifest
		ArtifactType string `json:"artifactType,omitempty"`
	}{m, artifactType})
	if err != nil {
		return nil, fmt.Errorf("encoding the manifest: %w", err)
	}
	return raw, nil
}

func describe(b []byte, mt types.MediaType) v1.Descriptor {
	return v1.Descriptor{MediaType: mt, Size: int64(len(b)), Digest: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sha256.Sum256(b))}}
}

// rawManifest is a manifest to remote.Put.
type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error)        { return r, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// embedded adds to held the bundles m's layers embed whose content hashes
// to their descriptor's digest (a descriptor that lies is ignored: the
// bundle is then fetched by digest and checked).
func embedded(m *v1.Manifest, held map[v1.Hash][]byte) {
	for _, l := range m.Layers {
		if l.MediaType != types.MediaType(BundleMediaType) || l.Data == nil || len(l.Data) > maxBundleSize ||
			l.Digest.Algorithm != "sha256" {
			continue
		}
		if fmt.Sprintf("%x", sha256.Sum256(l.Data)) == l.Digest.Hex {
			held[l.Digest] = l.Data
		}
	}
}

// fetchEvidenceManifest reads the evidence manifest d of img's repository
// (by digest: go-containerregistry checks its content) and returns the
// bundles it embeds. A manifest the registry lost holds none: each bundle
// is then fetched by digest.
func fetchEvidenceManifest(ctx context.Context, img name.Digest, d string, opts []remote.Option) (map[v1.Hash][]byte, error) {
	held := map[v1.Hash][]byte{}
	m, _, err := readEvidenceManifest(ctx, img, d, opts)
	if err != nil || m == nil {
		return held, err
	}
	embedded(m, held)
	return held, nil
}

// readEvidenceManifest reads and parses the evidence manifest d of img's
// repository (nil when the registry lost it) and returns its bytes too.
func readEvidenceManifest(ctx context.Context, img name.Digest, d string, opts []remote.Option) (*v1.Manifest, []byte, error) {
	ref, err := name.NewDigest(img.Context().Name()+"@"+d, name.StrictValidation)
	if err != nil {
		return nil, nil, &exitcode.InvalidInput{Err: fmt.Errorf("recorded evidence manifest %q of %s: %w", d, img, err)}
	}
	desc, err := remote.Get(ref, append(opts, remote.WithContext(ctx))...)
	if isNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("fetching the evidence manifest %s: %w", ref, registry.Wrap("get", ref.String(), err))
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the evidence manifest %s: %w", ref, err)
	}
	return m, desc.Manifest, nil
}

// ErrNotEvidenceManifest means the recorded evidence manifest is not an
// evidence manifest (EvidenceArtifactType) whose subject is the image.
var ErrNotEvidenceManifest = errors.New("not an evidence manifest of the image")

// Sealed lists the bundle digests the evidence manifest d of image (a
// digest reference) seals, in its order: what promote candidate verified
// and pushed (Options.Seal). found is false when the registry no longer
// has the manifest. A manifest of another artifact type or about another
// image is ErrNotEvidenceManifest. The manifest's bytes are read from the
// cache when it holds them (they hash to d), else from the registry and
// then kept in the cache: a warm gate makes no registry request.
func Sealed(ctx context.Context, image, d string, opts Options) (digests []string, found bool, err error) {
	img, err := parseImage(image)
	if err != nil {
		return nil, false, err
	}
	h, err := v1.NewHash(d)
	if err != nil {
		return nil, false, &exitcode.InvalidInput{Err: fmt.Errorf("recorded evidence manifest %q of %s: %w", d, img, err)}
	}
	if err := opts.open(); err != nil {
		return nil, false, err
	}
	var m *v1.Manifest
	raw := opts.cache.get(h)
	if raw != nil {
		if m, err = v1.ParseManifest(bytes.NewReader(raw)); err != nil {
			raw = nil // not a manifest: read it from the registry
		}
	}
	if raw == nil {
		if err := opts.connect(ctx, img); err != nil {
			return nil, false, err
		}
		if m, raw, err = readEvidenceManifest(ctx, img, d, opts.Remote); err != nil || m == nil {
			return nil, false, err
		}
		if err := opts.cache.put(h, raw); err != nil {
			return nil, false, err
		}
	}
	var typed struct {
		ArtifactType string `json:"artifactType"`
	}
	if json.Unmarshal(raw, &typed) != nil || typed.ArtifactType != EvidenceArtifactType || m.Subject == nil ||
		m.Subject.Digest.String() != img.DigestStr() {
		return nil, true, fmt.Errorf("evidence manifest %s of %s: %w", d, img, ErrNotEvidenceManifest)
	}
	for _, l := range m.Layers {
		if l.MediaType == types.MediaType(BundleMediaType) {
			digests = append(digests, l.Digest.String())
		}
	}
	return digests, true, nil
}
