package vsa

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/remotelimit"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/signing"
)

// maxBundle caps a referrer's bundle read while looking for a published
// summary.
const maxBundle = 4 << 20

// AnnotationContent is cosign's annotation of a bundle referrer saying
// what the bundle holds.
const AnnotationContent = "dev.sigstore.bundle.content"

// Publisher signs summaries and attaches them to their image.
type Publisher struct {
	// Signer signs the summaries: a key (signing.Key) or a keyless
	// identity (signing.Keyless).
	Signer signing.Signer
	// Remote are the registry options (authentication, user agent).
	Remote []remote.Option
	// Transport is the base transport (nil: remote.DefaultTransport);
	// every response is bounded (remotelimit).
	Transport http.RoundTripper
	// Attempts bounds the tries (default 5); Backoff is the first wait,
	// doubled after each failure (default 1s).
	Attempts int
	Backoff  time.Duration
}

// Published is a summary attached to its image.
type Published struct {
	// Statement is the sha256:<hex> of the statement: the same summary,
	// the same digest.
	Statement string `json:"statement"`
	// Bundle is the digest of the signed bundle, Manifest the digest of
	// the referrer manifest that holds it.
	Bundle   string `json:"bundle"`
	Manifest string `json:"manifest"`
	// Existing is true when the summary was already published (nothing
	// was pushed).
	Existing bool `json:"-"`
}

// Publish signs s's statement and attaches it to s.Image, unless a
// referrer of the image already holds a bundle of the same statement
// (then that one is returned, Existing set). A registry failure is retried
// with backoff; the last one is returned wrapped.
func (p *Publisher) Publish(ctx context.Context, s *Summary) (*Published, error) {
	if p.Signer == nil {
		return nil, errors.New("publishing a verification summary: no signer")
	}
	stmt, err := s.Statement()
	if err != nil {
		return nil, err
	}
	attempts, wait := p.Attempts, p.Backoff
	if attempts < 1 {
		attempts = 5
	}
	if wait <= 0 {
		wait = time.Second
	}
	var last error
	for i := range attempts {
		if i > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("publishing the verification summary of %s in %s: %w (after %w)", s.Image, s.Environment,
					context.Cause(ctx), last)
			case <-t.C:
			}
			wait *= 2
		}
		out, err := p.publish(ctx, s.Image, stmt)
		if err == nil {
			return out, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("publishing the verification summary of %s in %s (%d attempts): %w", s.Image, s.Environment, attempts, last)
}

// options are p's registry options with a bounded transport.
func (p *Publisher) options(ctx context.Context) []remote.Option {
	base := p.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	limits := remotelimit.Registry(remotelimit.Limit{Kind: "attestation bundle", Max: maxBundle})
	return append(slices.Clip(p.Remote), remote.WithTransport(remotelimit.New(base, limits)), remote.WithContext(ctx))
}

// publish is one attempt: find the statement among the image's
// referrers, else sign and attach it.
func (p *Publisher) publish(ctx context.Context, image string, stmt []byte) (*Published, error) {
	img, err := name.NewDigest(image, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("summary image %q: %w", image, err)
	}
	opts := p.options(ctx)
	out := &Published{Statement: fmt.Sprintf("sha256:%x", sha256.Sum256(stmt))}
	found, err := Find(ctx, img, stmt, opts)
	if err != nil {
		return nil, err
	}
	if found != nil {
		found.Statement, found.Existing = out.Statement, true
		return found, nil
	}
	b, err := p.Signer.SignStatement(ctx, stmt)
	if err != nil {
		return nil, fmt.Errorf("signing the verification summary of %s: %w", img, err)
	}
	ann := map[string]string{trust.AnnotationPredicateType: PredicateType, AnnotationContent: "dsse-envelope"}
	m, err := trust.Attach(ctx, img.String(), trust.BundleMediaType, ann, [][]byte{b}, p.Remote)
	if err != nil {
		return nil, err
	}
	out.Bundle, out.Manifest = fmt.Sprintf("sha256:%x", sha256.Sum256(b)), m
	return out, nil
}

// Find looks among img's referrers (the referrers API, or the referrers
// tag sha256-<hex>) for a Sigstore bundle whose DSSE payload is stmt,
// byte for byte, and returns where it is (nil when none is). It verifies
// no signature: it only spares a second push of the same statement.
func Find(ctx context.Context, img name.Digest, stmt []byte, opts []remote.Option) (*Published, error) {
	opts = append(slices.Clip(opts), remote.WithContext(ctx))
	idx, err := remote.Referrers(img, opts...)
	if err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the referrers of %s: %w", img, registry.Wrap("referrers", img.String(), err))
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the referrers of %s: %w", img, err)
	}
	for _, d := range im.Manifests {
		if pt, ok := d.Annotations[trust.AnnotationPredicateType]; ok && pt != PredicateType {
			continue
		}
		ref := img.Context().Digest(d.Digest.String())
		desc, err := remote.Get(ref, opts...)
		if err != nil {
			return nil, fmt.Errorf("fetching the referrer %s: %w", ref, registry.Wrap("get", ref.String(), err))
		}
		m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			continue // not a manifest: not ours
		}
		for _, l := range m.Layers {
			if l.MediaType != types.MediaType(trust.BundleMediaType) {
				continue
			}
			data, err := layerBytes(ctx, img, l, opts)
			if err != nil {
				return nil, err
			}
			if payloadOf(data) != nil && bytes.Equal(payloadOf(data), stmt) {
				return &Published{Bundle: l.Digest.String(), Manifest: d.Digest.String()}, nil
			}
		}
	}
	return nil, nil
}

// layerBytes is the content of l: embedded in its descriptor, else its
// blob; either way checked against its digest.
func layerBytes(ctx context.Context, img name.Digest, l v1.Descriptor, opts []remote.Option) ([]byte, error) {
	data := l.Data
	if data == nil {
		if l.Size > maxBundle {
			return nil, nil
		}
		ref := img.Context().Digest(l.Digest.String())
		layer, err := remote.Layer(ref, append(opts, remote.WithContext(ctx))...)
		if err != nil {
			return nil, fmt.Errorf("fetching the bundle %s: %w", ref, registry.Wrap("blob", ref.String(), err))
		}
		rc, err := layer.Compressed()
		if err != nil {
			return nil, fmt.Errorf("fetching the bundle %s: %w", ref, registry.Wrap("blob", ref.String(), err))
		}
		defer rc.Close()
		if data, err = io.ReadAll(io.LimitReader(rc, maxBundle+1)); err != nil {
			return nil, fmt.Errorf("reading the bundle %s: %w", ref, registry.Wrap("blob", ref.String(), err))
		}
	}
	if l.Digest.Algorithm != "sha256" || fmt.Sprintf("%x", sha256.Sum256(data)) != l.Digest.Hex {
		return nil, nil // a descriptor that lies: not a match
	}
	return data, nil
}

// payloadOf is the DSSE payload of a Sigstore bundle (nil: none).
func payloadOf(data []byte) []byte {
	var b bundle.Bundle
	if data == nil || b.UnmarshalJSON(data) != nil {
		return nil
	}
	env, err := b.Envelope()
	if err != nil || env == nil {
		return nil
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil
	}
	return payload
}

// notFound reports whether err is the registry's "not found" (404,
// MANIFEST_UNKNOWN, NAME_UNKNOWN).
func notFound(err error) bool {
	return errors.Is(registry.Wrap("referrers", "", err), registry.ErrNotFound)
}
