package trust

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/registry"
)

// BundleMediaType is the media type of a Sigstore bundle v0.3: the
// artifactType of a referrer and the media type of its layer.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// AnnotationPredicateType is the referrer manifest's annotation naming
// the bundle's predicate type (cosign's).
const AnnotationPredicateType = "dev.sigstore.bundle.predicateType"

// maxBundleSize caps a bundle read from the registry.
const maxBundleSize = 4 << 20

// discover lists the digests of the Sigstore bundles attached to img: the
// layers of media type BundleMediaType of its OCI 1.1 referrers (the
// registry's referrers API, or ggcr's fallback tag sha256-<hex>), and the
// bundle layers of the cosign tags sha256-<hex>.sig and .att. Sorted,
// without duplicates; held are the bundles those manifests embed (the
// descriptor's data field), which need no blob request.
func discover(ctx context.Context, img name.Digest, opts []remote.Option) ([]v1.Hash, map[v1.Hash][]byte, error) {
	seen, held := map[v1.Hash]bool{}, map[v1.Hash][]byte{}
	idx, err := remote.Referrers(img, append(opts, remote.WithContext(ctx))...)
	if err != nil && !isNotFound(err) {
		return nil, nil, fmt.Errorf("listing the referrers of %s: %w", img, registry.Wrap("referrers", img.String(), err))
	}
	if idx != nil {
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, nil, fmt.Errorf("reading the referrers of %s: %w", img, err)
		}
		// Every referrer: registries disagree on a referrer's artifactType
		// (the manifest's artifactType, or its config's media type).
		for _, d := range im.Manifests {
			if err := bundleLayers(ctx, img.Context().Digest(d.Digest.String()), opts, seen, held); err != nil {
				return nil, nil, err
			}
		}
	}
	h := strings.Replace(img.DigestStr(), ":", "-", 1)
	for _, suffix := range []string{".sig", ".att"} { // cosign's tags
		if err := bundleLayers(ctx, img.Context().Tag(h+suffix), opts, seen, held); err != nil {
			return nil, nil, err
		}
	}
	out := make([]v1.Hash, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, held, nil
}

// discoverSummaries lists the digests of the bundles of img's referrers
// that may carry a verification summary (by the referrer's predicate type
// annotation; a referrer without one is read too) and of its cosign tag
// sha256-<hex>.att, sorted, adding the bundles they embed to held. What
// they carry is judged like any bundle.
func discoverSummaries(ctx context.Context, img name.Digest, opts []remote.Option, held map[v1.Hash][]byte) ([]v1.Hash, error) {
	seen := map[v1.Hash]bool{}
	idx, err := remote.Referrers(img, append(opts, remote.WithContext(ctx))...)
	if err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("listing the referrers of %s: %w", img, registry.Wrap("referrers", img.String(), err))
	}
	var im *v1.IndexManifest
	if idx != nil {
		if im, err = idx.IndexManifest(); err != nil {
			return nil, fmt.Errorf("reading the referrers of %s: %w", img, err)
		}
	} else {
		im = &v1.IndexManifest{}
	}
	for _, d := range im.Manifests {
		if pt, ok := d.Annotations[AnnotationPredicateType]; ok && pt != PredicateVerificationSummary {
			continue
		}
		if err := bundleLayers(ctx, img.Context().Digest(d.Digest.String()), opts, seen, held); err != nil {
			return nil, err
		}
	}
	if err := bundleLayers(ctx, img.Context().Tag(strings.Replace(img.DigestStr(), ":", "-", 1)+".att"), opts, seen, held); err != nil {
		return nil, err
	}
	out := make([]v1.Hash, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// bundleLayers adds the digests of ref's layers of media type
// BundleMediaType to seen, and the bundles they embed to held (a missing
// ref adds none).
func bundleLayers(ctx context.Context, ref name.Reference, opts []remote.Option, seen map[v1.Hash]bool, held map[v1.Hash][]byte) error {
	desc, err := remote.Get(ref, append(opts, remote.WithContext(ctx))...)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fetching %s: %w", ref, registry.Wrap("get", ref.String(), err))
	}
	m, err := v1.ParseManifest(strings.NewReader(string(desc.Manifest)))
	if err != nil {
		return fmt.Errorf("reading the manifest of %s: %w", ref, err)
	}
	for _, l := range m.Layers {
		if l.MediaType == types.MediaType(BundleMediaType) {
			seen[l.Digest] = true
		}
	}
	embedded(m, held)
	return nil
}

// errNoBlob is a bundle the registry does not have.
var errNoBlob = errors.New("the registry has no such blob")

// fetchBundle reads the bundle blob d of img's repository, by digest,
// checking its content hashes to d; a bundle in held (embedded in a
// manifest already read, its content checked) needs no request.
func fetchBundle(ctx context.Context, img name.Digest, d v1.Hash, held map[v1.Hash][]byte, opts []remote.Option) ([]byte, error) {
	if data, ok := held[d]; ok {
		return data, nil
	}
	l, err := remote.Layer(img.Context().Digest(d.String()), append(opts, remote.WithContext(ctx))...)
	if err != nil {
		return nil, fmt.Errorf("fetching bundle %s of %s: %w", d, img, registry.Wrap("blob", img.Context().Digest(d.String()).String(), err))
	}
	rc, err := l.Compressed()
	if isNotFound(err) {
		return nil, fmt.Errorf("bundle %s of %s: %w", d, img, errNoBlob)
	}
	if err != nil {
		return nil, fmt.Errorf("fetching bundle %s of %s: %w", d, img, registry.Wrap("blob", img.Context().Digest(d.String()).String(), err))
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBundleSize+1))
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("bundle %s of %s: %w", d, img, errNoBlob)
		}
		return nil, fmt.Errorf("reading bundle %s of %s: %w", d, img, registry.Wrap("blob", img.Context().Digest(d.String()).String(), err))
	}
	if len(data) > maxBundleSize {
		return nil, fmt.Errorf("bundle %s of %s: larger than %d bytes", d, img, maxBundleSize)
	}
	if sum := fmt.Sprintf("%x", sha256.Sum256(data)); d.Algorithm != "sha256" || sum != d.Hex {
		return nil, fmt.Errorf("bundle %s of %s: content hashes to sha256:%s", d, img, sum)
	}
	return data, nil
}

// isNotFound reports whether err is the registry's 404 (or its
// MANIFEST_UNKNOWN / BLOB_UNKNOWN / NAME_UNKNOWN).
func isNotFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, e := range te.Errors {
		switch e.Code {
		case transport.ManifestUnknownErrorCode, transport.BlobUnknownErrorCode, transport.NameUnknownErrorCode:
			return true
		}
	}
	return false
}
