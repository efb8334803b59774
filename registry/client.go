package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/remotelimit"
)

// Defaults of [Options].
const (
	DefaultTimeout     = 30 * time.Second
	DefaultAttempts    = 5
	DefaultBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
	DefaultConcurrency = 8
)

// Options configures a [Client]. The zero value is usable.
type Options struct {
	// Keychain supplies credentials per registry; nil means
	// authn.DefaultKeychain (the Docker config in $DOCKER_CONFIG or
	// ~/.docker, credential helpers, podman's auth.json).
	Keychain authn.Keychain
	// Auth, when set, is used for every registry instead of Keychain.
	Auth authn.Authenticator
	// Insecure allows plain HTTP to any registry. Without it only loopback
	// registries (localhost, 127.0.0.0/8, ::1) may be spoken to over HTTP.
	Insecure bool
	// Timeout bounds each operation, retries included (default 30s).
	Timeout time.Duration
	// Attempts is how many times a request answered 429, 408 or 5xx is sent
	// (default 5); Backoff is the first wait (doubled each time, capped at
	// MaxBackoff), unless the registry sends a shorter Retry-After.
	Attempts            int
	Backoff, MaxBackoff time.Duration
	// Concurrency bounds the requests in flight (default 8).
	Concurrency int
	// CacheDir keeps manifests by digest on disk; empty keeps them in memory
	// for the life of the Client only.
	CacheDir string
	// Transport is the base HTTP transport (default: one with dial, TLS and
	// response-header timeouts).
	Transport http.RoundTripper
	// UserAgent is sent with every request.
	UserAgent string
}

// Client talks to registries. It is safe for concurrent use.
type Client struct {
	opts   Options
	puller *remote.Puller
	cache  *cache
}

// New returns a Client.
func New(opts Options) (*Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "throughline"
	}
	base := opts.Transport
	if base == nil {
		base = baseTransport(opts.Timeout)
	}
	var rt http.RoundTripper = &guardTransport{inner: base, insecure: opts.Insecure}
	rt = &retryTransport{inner: rt, attempts: opts.Attempts, backoff: opts.Backoff, maxBackoff: opts.MaxBackoff}
	rt = &limitTransport{inner: rt, sem: make(chan struct{}, opts.Concurrency)}
	ro := []remote.Option{
		// Every response bounded (remotelimit: manifests 4 MiB, tokens and
		// pings 64 KiB; this client reads no blobs) before
		// go-containerregistry buffers it.
		remote.WithTransport(remotelimit.New(rt, remotelimit.Registry(remotelimit.Default))),
		remote.WithUserAgent(opts.UserAgent),
		// Retries are ours (above): switch go-containerregistry's off.
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithRetryStatusCodes(),
		remote.WithJobs(opts.Concurrency),
	}
	switch {
	case opts.Auth != nil:
		ro = append(ro, remote.WithAuth(opts.Auth))
	case opts.Keychain != nil:
		ro = append(ro, remote.WithAuthFromKeychain(opts.Keychain))
	default:
		ro = append(ro, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	p, err := remote.NewPuller(ro...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return &Client{opts: opts, puller: p, cache: newCache(opts.CacheDir)}, nil
}

// Descriptor is what a reference resolved to.
type Descriptor struct {
	// Reference is the reference as given.
	Reference string `json:"reference"`
	// Repository is the full repository name (index.docker.io/library/nginx).
	Repository string `json:"repository"`
	// Registry is the registry host[:port] (index.docker.io).
	Registry string `json:"registry"`
	// Tag is the tag of the reference, empty for a digest reference.
	Tag string `json:"tag,omitempty"`
	// Digest is sha256:<hex> of the manifest or index.
	Digest    string `json:"digest"`
	MediaType string `json:"mediaType,omitempty"`
	Size      int64  `json:"size,omitempty"`
	// ConfigDigest is the config blob of an image manifest.
	ConfigDigest string `json:"configDigest,omitempty"`
	// Children are the manifests of an index, each with its platform.
	Children []Child `json:"children,omitempty"`
}

// Child is one manifest of an index.
type Child struct {
	Platform     Platform `json:"platform"`
	Digest       string   `json:"digest"`
	MediaType    string   `json:"mediaType,omitempty"`
	Size         int64    `json:"size,omitempty"`
	ConfigDigest string   `json:"configDigest,omitempty"`
}

// IsIndex reports whether the descriptor is a multi-arch index.
func (d *Descriptor) IsIndex() bool { return isIndex(types.MediaType(d.MediaType)) }

// Pinned is repository[:tag]@digest, the form a manifest should carry.
func (d *Descriptor) Pinned() string {
	s := d.Repository
	if d.Tag != "" {
		s += ":" + d.Tag
	}
	return s + "@" + d.Digest
}

// ChildFor returns the child of an index for a platform (linux/arm64 and
// linux/arm64/v8 are the same platform).
func (d *Descriptor) ChildFor(p Platform) (Child, bool) {
	for _, c := range d.Children {
		if c.Platform.Equal(p) {
			return c, true
		}
	}
	return Child{}, false
}

func describe(ref string, r name.Reference) *Descriptor {
	d := &Descriptor{Reference: ref, Repository: r.Context().Name(), Registry: r.Context().RegistryStr()}
	if t, ok := r.(name.Tag); ok {
		d.Tag = t.TagStr()
	}
	return d
}

func (c *Client) parse(_, ref string) (name.Reference, error) {
	// The error's Op stays "parse": callers tell a bad reference from a
	// bad answer by it.
	return ParseReference(ref, c.opts.Insecure)
}

func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opts.Timeout)
}

// ResolveDigest resolves a reference to its digest, media type and size with
// a HEAD request, falling back to GET when the registry does not answer HEAD
// properly. A digest reference whose manifest is cached needs no request.
// Tags are always asked of the registry.
func (c *Client) ResolveDigest(ctx context.Context, ref string) (*Descriptor, error) {
	r, err := c.parse("resolve", ref)
	if err != nil {
		return nil, err
	}
	d := describe(ref, r)
	if dg, ok := r.(name.Digest); ok {
		if m, ok := c.cache.get(dg.DigestStr()); ok {
			d.Digest, d.MediaType, d.Size = dg.DigestStr(), m.MediaType, int64(len(m.Manifest))
			return d, nil
		}
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	desc, err := c.puller.Head(ctx, r)
	if err != nil {
		// Some registries and proxies do not answer HEAD properly (405, no
		// Docker-Content-Digest): GET instead. Not found, unauthorized and
		// unreachable are answers, not a reason to ask again.
		if !errors.Is(classify(err), ErrInvalid) || ctx.Err() != nil {
			return nil, newError("resolve", ref, err)
		}
		m, gerr := c.fetch(ctx, ref, r)
		if gerr != nil {
			return nil, gerr
		}
		d.Digest, d.MediaType, d.Size = m.digest, m.MediaType, int64(len(m.Manifest))
		return d, nil
	}
	d.Digest, d.MediaType, d.Size = desc.Digest.String(), string(desc.MediaType), desc.Size
	return d, nil
}

type fetched struct {
	cachedManifest
	digest string
}

// fetch GETs a manifest, verifies it against its digest and caches it.
func (c *Client) fetch(ctx context.Context, ref string, r name.Reference) (fetched, error) {
	if dg, ok := r.(name.Digest); ok {
		if m, ok := c.cache.get(dg.DigestStr()); ok {
			return fetched{m, dg.DigestStr()}, nil
		}
	}
	rd, err := c.puller.Get(ctx, r)
	if err != nil {
		return fetched{}, newError("get", ref, err)
	}
	if len(rd.Manifest) > maxManifestSize {
		return fetched{}, invalidf("get", ref, "manifest of %d bytes exceeds the %d byte limit", len(rd.Manifest), maxManifestSize)
	}
	dig := rd.Digest.String()
	if rd.Digest.Algorithm == "sha256" && !verify(dig, rd.Manifest) {
		return fetched{}, invalidf("get", ref, "manifest does not match its digest %s", dig)
	}
	mt := string(rd.MediaType)
	if err := c.cache.put(dig, cachedManifest{MediaType: mt, Manifest: rd.Manifest}); err != nil {
		return fetched{}, fmt.Errorf("caching manifest %s of %s: %w", dig, ref, err)
	}
	return fetched{cachedManifest{MediaType: mt, Manifest: rd.Manifest}, dig}, nil
}

// Resolve resolves a reference and describes what it names: for an image
// manifest its config digest, for an index every child with its platform,
// digest and config digest. A tag costs one GET (plus, for an index, one GET
// per child not yet cached); a digest whose manifests are cached costs no
// request at all.
func (c *Client) Resolve(ctx context.Context, ref string) (*Descriptor, error) {
	r, err := c.parse("resolve", ref)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	d := describe(ref, r)
	m, err := c.fetch(ctx, ref, r)
	if err != nil {
		return nil, err
	}
	d.Digest, d.Size = m.digest, int64(len(m.Manifest))
	body, err := parseManifest(m.MediaType, m.Manifest)
	if err != nil {
		return nil, invalidf("resolve", ref, "malformed manifest %s: %w", m.digest, err)
	}
	d.MediaType = body.mediaType
	if !isIndex(types.MediaType(body.mediaType)) {
		d.ConfigDigest = body.config
		return d, nil
	}
	d.Children = make([]Child, len(body.manifests))
	errs := make([]error, len(body.manifests))
	var wg sync.WaitGroup
	for i, cd := range body.manifests {
		d.Children[i] = Child{Platform: platformOf(cd.Platform), Digest: cd.Digest.String(), MediaType: string(cd.MediaType), Size: cd.Size}
		if isIndex(cd.MediaType) || cd.Digest.Algorithm != "sha256" {
			continue // a nested index has no config of its own
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cref := r.Context().Digest(cd.Digest.String())
			cm, err := c.fetch(ctx, cref.String(), cref)
			if err != nil {
				var re *Error
				if errors.As(err, &re) && errors.Is(re.Kind, ErrNotFound) {
					errs[i] = invalidf("resolve", ref, "index %s names child %s (%s) that the registry does not have: %v",
						m.digest, cd.Digest, platformOf(cd.Platform), re.Err)
					return
				}
				errs[i] = err
				return
			}
			cb, err := parseManifest(cm.MediaType, cm.Manifest)
			if err != nil {
				errs[i] = invalidf("resolve", ref, "malformed manifest %s (child of %s): %w", cd.Digest, m.digest, err)
				return
			}
			d.Children[i].ConfigDigest = cb.config
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// ConfigDigest maps an image manifest (a child of an index, usually) to the
// digest of its config blob, which is what a container runtime may report as
// the imageID.
func (c *Client) ConfigDigest(ctx context.Context, ref string) (string, error) {
	d, err := c.Resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	if d.IsIndex() {
		return "", invalidf("config", ref, "%s is an index (%s), not an image manifest: pick a child", d.Digest, d.MediaType)
	}
	return d.ConfigDigest, nil
}

// Exists reports whether a digest reference still exists in its repository
// (HEAD, never cached). A 404 is (false, nil); any other failure is an
// error, ErrUnreachable when the registry could not answer.
func (c *Client) Exists(ctx context.Context, ref string) (bool, error) {
	r, err := c.parse("exists", ref)
	if err != nil {
		return false, err
	}
	if _, ok := r.(name.Digest); !ok {
		return false, invalidf("exists", ref, "want a digest reference (name@sha256:...), got a tag")
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if _, err := c.puller.Head(ctx, r); err != nil {
		err = newError("exists", ref, err)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Result is one outcome of [Client.ResolveAll].
type Result struct {
	Descriptor *Descriptor
	Err        error
}

// ResolveAll resolves every reference (Resolve when full, else
// ResolveDigest), Concurrency at a time, and returns the results in order.
func (c *Client) ResolveAll(ctx context.Context, refs []string, full bool) []Result {
	out := make([]Result, len(refs))
	sem := make(chan struct{}, c.opts.Concurrency)
	var wg sync.WaitGroup
	for i, ref := range refs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i].Err = newError("resolve", ref, ctx.Err())
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if full {
				out[i].Descriptor, out[i].Err = c.Resolve(ctx, ref)
			} else {
				out[i].Descriptor, out[i].Err = c.ResolveDigest(ctx, ref)
			}
		}()
	}
	wg.Wait()
	return out
}

type manifestBody struct {
	mediaType string
	config    string
	manifests []v1.Descriptor
}

func isIndex(mt types.MediaType) bool {
	return mt == types.OCIImageIndex || mt == types.DockerManifestList
}

// parseManifest reads what a manifest is from its bytes, trusting the
// registry's Content-Type only when the body does not say.
func parseManifest(contentType string, data []byte) (manifestBody, error) {
	var probe struct {
		SchemaVersion *int            `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Manifests     json.RawMessage `json:"manifests"`
		Config        json.RawMessage `json:"config"`
		FSLayers      json.RawMessage `json:"fsLayers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&probe); err != nil {
		return manifestBody{}, fmt.Errorf("not JSON: %w", err)
	}
	if probe.SchemaVersion == nil {
		return manifestBody{}, errors.New("no schemaVersion")
	}
	mt := probe.MediaType
	if mt == "" {
		mt = contentType
	}
	switch {
	case *probe.SchemaVersion == 1 || probe.FSLayers != nil:
		return manifestBody{mediaType: string(types.DockerManifestSchema1)}, nil
	case probe.Manifests != nil:
		im, err := v1.ParseIndexManifest(bytes.NewReader(data))
		if err != nil {
			return manifestBody{}, err
		}
		if mt == "" || !isIndex(types.MediaType(mt)) {
			mt = string(types.OCIImageIndex)
		}
		for i, c := range im.Manifests {
			if c.Digest.Algorithm == "" || c.Digest.Hex == "" {
				return manifestBody{}, fmt.Errorf("manifests[%d] has no digest", i)
			}
		}
		return manifestBody{mediaType: mt, manifests: im.Manifests}, nil
	case probe.Config != nil:
		m, err := v1.ParseManifest(bytes.NewReader(data))
		if err != nil {
			return manifestBody{}, err
		}
		if m.Config.Digest.Hex == "" {
			return manifestBody{}, errors.New("config has no digest")
		}
		if mt == "" {
			mt = string(types.OCIManifestSchema1)
		}
		return manifestBody{mediaType: mt, config: m.Config.Digest.String()}, nil
	}
	return manifestBody{}, errors.New("neither an image manifest (config) nor an index (manifests)")
}
