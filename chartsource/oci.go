package chartsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/remotelimit"
)

// Media types of a Helm chart in an OCI registry (helm.sh/helm/v4/pkg/registry).
const (
	HelmConfigMediaType     = "application/vnd.cncf.helm.config.v1+json"
	HelmChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// HelmProvLayerMediaType is a provenance file, allowed beside the chart
	// layer and not used.
	HelmProvLayerMediaType = "application/vnd.cncf.helm.chart.provenance.v1.prov"
)

// remoteOptions are go-containerregistry's options for one operation on
// registry host, every request through the host guard and bounded
// (remotelimit: manifests 4 MiB, the chart layer MaxChartSize, tokens 64 KiB)
// before go-containerregistry buffers anything.
func (f *Fetcher) remoteOptions(ctx context.Context, host string) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(remotelimit.New(newHostGuard(f.opts.Transport, host, true, f.opts.Insecure),
			remotelimit.Registry(remotelimit.Limit{Kind: "chart layer", Max: f.opts.MaxChartSize}))),
		remote.WithAuthFromKeychain(f.opts.Keychain),
		remote.WithUserAgent(f.opts.UserAgent),
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithRetryStatusCodes(),
	}
}

// nameOptions: plain HTTP only to loopback registries, or everywhere when
// insecure.
func (f *Fetcher) nameOptions(ref Ref) []name.Option {
	u := ref.OCIReference()
	host, _, _ := cutHost(u)
	if f.opts.Insecure || isLoopback(host) {
		return []name.Option{name.Insecure}
	}
	return nil
}

func cutHost(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// fetchOCI returns the chart layer of the manifest digest of ref's
// repository, and the layer's digest. The manifest is fetched BY digest
// (the tag is never asked), verified, and must be a Helm chart.
func (f *Fetcher) fetchOCI(ctx context.Context, ref Ref, digest string) ([]byte, string, error) {
	manifest, ok := f.cache.get("manifests", digest, maxManifestSize)
	if !ok {
		if f.opts.Offline {
			return nil, "", f.offline(ref, digest)
		}
		var err error
		if manifest, err = f.getManifest(ctx, ref, digest); err != nil {
			return nil, "", err
		}
	}
	layer, err := chartLayer(ref, digest, manifest, f.opts.MaxChartSize)
	if err != nil {
		return nil, "", err
	}
	if err := f.cache.put("manifests", digest, manifest); err != nil {
		return nil, "", err
	}
	ld := layer.Digest.String()
	if data, ok := f.cache.get("blobs", ld, f.opts.MaxChartSize); ok {
		return data, ld, nil
	}
	if f.opts.Offline {
		return nil, "", f.offline(ref, digest)
	}
	data, err := f.getBlob(ctx, ref, layer)
	if err != nil {
		return nil, "", err
	}
	if err := f.cache.put("blobs", ld, data); err != nil {
		return nil, "", err
	}
	return data, ld, nil
}

// getManifest GETs the manifest digest of ref's repository and checks it
// hashes to digest.
func (f *Fetcher) getManifest(ctx context.Context, ref Ref, digest string) ([]byte, error) {
	d, err := name.NewDigest(ref.OCIReference()+"@"+digest, f.nameOptions(ref)...)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s@%s: %w", ref, digest, err)}
	}
	desc, err := remote.Get(d, f.remoteOptions(ctx, d.RegistryStr())...)
	if err != nil {
		return nil, ociError(ref, "manifest "+digest, err)
	}
	if len(desc.Manifest) > maxManifestSize {
		return nil, tooLarge(ref, "manifest "+digest, maxManifestSize)
	}
	if got := digestOf(desc.Manifest); got != digest {
		return nil, &exitcode.Refusal{Rule: RuleChartDigestMismatch, Object: ref.String(),
			Reason: fmt.Sprintf("the registry answered %s with a manifest whose digest is %s", digest, got)}
	}
	return desc.Manifest, nil
}

// chartLayer checks that manifest is a Helm chart (an OCI image manifest
// whose config is Helm's and whose one content layer is a chart; a
// provenance layer may sit beside it) and returns the chart layer.
func chartLayer(ref Ref, digest string, manifest []byte, maxChart int64) (v1.Descriptor, error) {
	notChart := func(format string, args ...any) error {
		return &exitcode.Refusal{Rule: RuleChartNotChart, Object: ref.String() + "@" + digest,
			Reason: "not a Helm chart: " + fmt.Sprintf(format, args...)}
	}
	m, err := v1.ParseManifest(bytes.NewReader(manifest))
	if err != nil {
		return v1.Descriptor{}, notChart("the manifest does not parse: %v", err)
	}
	if m.MediaType != "" && m.MediaType != types.OCIManifestSchema1 {
		return v1.Descriptor{}, notChart("media type %s (want %s)", m.MediaType, types.OCIManifestSchema1)
	}
	if m.Config.MediaType != HelmConfigMediaType {
		return v1.Descriptor{}, notChart("config media type %q (want %s)", m.Config.MediaType, HelmConfigMediaType)
	}
	var chart []v1.Descriptor
	for _, l := range m.Layers {
		switch l.MediaType {
		case HelmChartLayerMediaType:
			chart = append(chart, l)
		case HelmProvLayerMediaType:
		default:
			return v1.Descriptor{}, notChart("layer %s has media type %q", l.Digest, l.MediaType)
		}
	}
	if len(chart) != 1 {
		return v1.Descriptor{}, notChart("%d chart layers (want one %s)", len(chart), HelmChartLayerMediaType)
	}
	if chart[0].Digest.Algorithm != "sha256" || !ValidDigest(chart[0].Digest.String()) {
		return v1.Descriptor{}, notChart("chart layer digest %q is not sha256", chart[0].Digest)
	}
	if chart[0].Size > maxChart || chart[0].Size < 0 {
		return v1.Descriptor{}, tooLarge(ref, fmt.Sprintf("chart layer %s (%d bytes)", chart[0].Digest, chart[0].Size), maxChart)
	}
	return chart[0], nil
}

// getBlob downloads the chart layer, capped, and checks its digest.
func (f *Fetcher) getBlob(ctx context.Context, ref Ref, layer v1.Descriptor) ([]byte, error) {
	d, err := name.NewDigest(ref.OCIReference()+"@"+layer.Digest.String(), f.nameOptions(ref)...)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s layer %s: %w", ref, layer.Digest, err)}
	}
	l, err := remote.Layer(d, f.remoteOptions(ctx, d.RegistryStr())...)
	if err != nil {
		return nil, ociError(ref, "chart layer "+layer.Digest.String(), err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, ociError(ref, "chart layer "+layer.Digest.String(), err)
	}
	defer func() { _ = rc.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(rc, f.opts.MaxChartSize+1))
	if errors.Is(err, remotelimit.ErrTooLarge) {
		return nil, ociError(ref, "chart layer "+layer.Digest.String(), err)
	}
	if int64(len(data)) > f.opts.MaxChartSize {
		return nil, tooLarge(ref, "chart layer "+layer.Digest.String(), f.opts.MaxChartSize)
	}
	if got := digestOf(data); got != layer.Digest.String() {
		return nil, &exitcode.Refusal{Rule: RuleChartDigestMismatch, Object: ref.String(),
			Reason: fmt.Sprintf("chart layer %s: the registry served content whose digest is %s", layer.Digest, got)}
	}
	if err != nil { // go-containerregistry's own digest check at EOF; ours above names both digests
		return nil, ociError(ref, "chart layer "+layer.Digest.String(), err)
	}
	return data, nil
}

// resolveOCI asks the registry for the tag's manifest digest, then fetches
// and checks the chart by that digest.
func (f *Fetcher) resolveOCI(ctx context.Context, ref Ref) (*Resolved, error) {
	t, err := name.NewTag(ref.OCIReference()+":"+ref.OCITag(), f.nameOptions(ref)...)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: %w", ref, err)}
	}
	opts := f.remoteOptions(ctx, t.RegistryStr())
	var digest string
	if desc, err := remote.Head(t, opts...); err == nil {
		digest = desc.Digest.String()
	} else {
		// Some registries do not answer HEAD: GET the manifest instead.
		d, gerr := remote.Get(t, opts...)
		if gerr != nil {
			return nil, ociError(ref, "tag "+ref.OCITag(), gerr)
		}
		digest = d.Digest.String()
	}
	if !ValidDigest(digest) {
		return nil, &exitcode.Refusal{Rule: RuleChartNotChart, Object: ref.String(), Reason: fmt.Sprintf("digest %q is not sha256", digest)}
	}
	data, ld, err := f.fetchOCI(ctx, ref, digest)
	if err != nil {
		return nil, err
	}
	return &Resolved{Ref: ref, Kind: KindOCI, Digest: digest, Package: ld, Size: int64(len(data))}, nil
}

// ociError classifies a go-containerregistry error.
func ociError(ref Ref, what string, err error) error {
	var te *transport.Error
	status := 0
	if errors.As(err, &te) {
		status = te.StatusCode
		for _, d := range te.Errors {
			if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode || d.Code == transport.BlobUnknownErrorCode {
				status = 404
			}
		}
	}
	return sourceError(ref, what, status, err)
}
