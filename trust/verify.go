package trust

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/remotelimit"
)

// registryLimits bound every registry response of a verification before
// go-containerregistry buffers it: manifests and referrers lists
// remotelimit.Manifest, bundle blobs maxBundleSize, the rest (tokens,
// pings) remotelimit.Token.
var registryLimits = remotelimit.Registry(remotelimit.Limit{Kind: "attestation bundle", Max: maxBundleSize})

// baseTransport is t, or go-containerregistry's default.
func baseTransport(t http.RoundTripper) http.RoundTripper {
	if t == nil {
		return remote.DefaultTransport
	}
	return t
}

// Options are a verification's inputs besides the policy and the image.
type Options struct {
	// Remote are the registry options (authentication, user agent). A
	// transport given here is replaced: set Transport.
	Remote []remote.Option
	// Transport is the base transport of registry requests (nil:
	// remote.DefaultTransport). Every request goes through remotelimit
	// (manifests and referrers 4 MiB, bundles 4 MiB, tokens 64 KiB).
	Transport http.RoundTripper
	// Session, when set, is the gate's registry connections: one
	// authentication handshake per registry for every image of the gate
	// (its transport replaces one given in Remote).
	Session *Session
	// CacheDir is the bundle cache's directory (empty: no cache): the
	// bytes of bundles that verified, by digest, so that a warm gate
	// makes no registry request. Every bundle read from it is verified
	// again. Created 0700 when missing; one that is a symbolic link, not
	// a directory, writable by group or others or owned by another user
	// fails the verification (exit 1, naming it).
	CacheDir string
	// SourceCommit is the commit the provenance must name as its source
	// (empty: any commit of an allowed source repository).
	SourceCommit string
	// Now is the time scan ages are measured at (zero: time.Now()).
	Now time.Time
	// Manifest is the digest of the evidence manifest recorded with the
	// evidence (Evidence.Manifest): VerifyRecorded reads the recorded
	// bundles it embeds with one request instead of one per bundle (a
	// bundle it lacks is fetched by digest). It decides nothing: each
	// bundle is checked against its recorded digest. Not read when the
	// cache holds every recorded bundle.
	Manifest string
	// Seal: Verify pushes the verified bundles as one evidence manifest
	// next to the image (EvidenceArtifactType; push access needed) and
	// names it in Evidence.Manifest, for the later gates.
	Seal bool

	cache cache // opened from CacheDir by Verify and VerifyRecorded
}

// open checks and opens the cache directory.
func (o *Options) open() (err error) {
	o.cache, err = openCache(o.CacheDir)
	return err
}

// Evidence is the verified evidence of one image: what a promotion record
// stores and every later gate re-verifies by digest.
type Evidence struct {
	// Image is the image, repository@sha256:<hex>.
	Image string `json:"image"`
	// SourceCommit is the source commit the verified provenance names.
	SourceCommit string `json:"sourceCommit,omitempty"`
	// Items are the verified bundles the policy's requirements rest on.
	Items []Item `json:"items"`
	// Manifest is the digest of the evidence manifest that embeds the
	// items' bundles (Options.Seal, Options.Manifest), if any.
	Manifest string `json:"manifest,omitempty"`
}

// Item is one verified signature or attestation bundle.
type Item struct {
	// Kind is signature, provenance, sbom or vulnerability-scan.
	Kind string `json:"kind"`
	// Digest is the bundle's digest (sha256:<hex> of its JSON).
	Digest string `json:"digest"`
	// PredicateType is the in-toto statement's predicate type.
	PredicateType string `json:"predicateType"`
	// Signer is the policy signer that verified it.
	Signer string `json:"signer"`
	// Scan is what a vulnerability scan's predicate says (ReadScan), nil
	// for any other kind.
	Scan *ScanSummary `json:"scan,omitempty"`
}

// ScanSummary is a verified scan's age and worst finding, as candidacy
// records it in Git (promotion.EvidenceItem's scan fields).
type ScanSummary struct {
	// Finished is metadata.scanFinishedOn.
	Finished time.Time `json:"finished"`
	// Worst is the highest severity of its findings (a word of
	// v1alpha1.Severities; "none" without findings), WorstCount how many
	// have it, Findings how many it lists.
	Worst      string `json:"worst"`
	WorstCount int    `json:"worstCount"`
	Findings   int    `json:"findings"`
}

// Summary is what sc says for the record.
func (sc *Scan) Summary() *ScanSummary {
	out := &ScanSummary{Finished: sc.Finished.UTC(), Worst: v1alpha1.Severities()[sc.Worst], WorstCount: sc.WorstCount, Findings: sc.Findings}
	if sc.Findings == 0 {
		out.Worst, out.WorstCount = "none", 0
	}
	return out
}

// Digests are the bundle digests of e, in order: what VerifyRecorded takes.
func (e *Evidence) Digests() []string {
	var out []string
	for _, it := range e.Items {
		if !slices.Contains(out, it.Digest) {
			out = append(out, it.Digest)
		}
	}
	return out
}

// Verify discovers the Sigstore bundles attached to image (a digest
// reference) in its registry, verifies them against pol and returns the
// evidence that satisfies each of pol's requirements. A missing or failing
// requirement is an *exitcode.Refusal naming the image and the evidence
// digest; an image without a digest is invalid input.
func Verify(ctx context.Context, pol *Policy, image string, opts Options) (*Evidence, error) {
	img, err := parseImage(image)
	if err != nil || !pol.Requires() {
		return &Evidence{Image: image}, err
	}
	if err := opts.open(); err != nil {
		return nil, err
	}
	if err := opts.connect(ctx, img); err != nil {
		return nil, err
	}
	found, held, err := discover(ctx, img, opts.Remote)
	if err != nil {
		return nil, err
	}
	ev, err := judge(ctx, pol, img, found, held, opts, nil)
	if err != nil || !opts.Seal {
		return ev, err
	}
	return seal(ctx, img, ev, held, opts)
}

// seal pushes ev's bundles (held, or fetched by digest) as one evidence
// manifest of img and names it in ev.
func seal(ctx context.Context, img name.Digest, ev *Evidence, held map[v1.Hash][]byte, opts Options) (*Evidence, error) {
	var bundles [][]byte
	for _, d := range ev.Digests() {
		h, err := v1.NewHash(d)
		if err != nil {
			return nil, fmt.Errorf("evidence %s of %s: %w", d, img, err)
		}
		data, err := fetchBundle(ctx, img, h, held, opts.Remote)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, data)
	}
	m, err := Attach(ctx, img.String(), EvidenceArtifactType, nil, bundles, opts.Remote)
	if err != nil {
		return nil, err
	}
	ev.Manifest = m
	return ev, nil
}

// VerifyRecorded re-verifies exactly the bundles recorded at candidacy
// (digests, from Evidence.Digests), fetched by digest, against pol (the
// target environment's policy): it never looks for newer evidence. A
// recorded bundle the registry no longer has is refused (rule
// evidence-missing).
func VerifyRecorded(ctx context.Context, pol *Policy, image string, digests []string, opts Options) (*Evidence, error) {
	img, err := parseImage(image)
	if err != nil || !pol.Requires() {
		return &Evidence{Image: image}, err
	}
	hs := make([]v1.Hash, 0, len(digests))
	for _, d := range digests {
		h, err := v1.NewHash(d)
		if err != nil {
			return nil, &exitcode.InvalidInput{Err: fmt.Errorf("recorded evidence digest %q: %w", d, err)}
		}
		hs = append(hs, h)
	}
	if err := opts.open(); err != nil {
		return nil, err
	}
	held := map[v1.Hash][]byte{}
	summaries := pol.summary != nil
	if !cached(hs, opts.cache) || summaries { // else no registry request at all
		if err := opts.connect(ctx, img); err != nil {
			return nil, err
		}
		if opts.Manifest != "" {
			if held, err = fetchEvidenceManifest(ctx, img, opts.Manifest, opts.Remote); err != nil {
				return nil, err
			}
		}
	}
	var optional map[v1.Hash]bool // found, not recorded
	if summaries {
		// Published after candidacy, a summary is never recorded: it is
		// found next to the image, and judged like any bundle.
		found, err := discoverSummaries(ctx, img, opts.Remote, held)
		if err != nil {
			return nil, err
		}
		optional = map[v1.Hash]bool{}
		for _, h := range found {
			if !slices.Contains(hs, h) {
				hs = append(hs, h)
				optional[h] = true
			}
		}
	}
	ev, err := judge(ctx, pol, img, hs, held, opts, optional)
	if ev != nil {
		ev.Manifest = opts.Manifest
	}
	return ev, err
}

// cached reports whether the cache holds the bytes of every bundle of hs
// (then no registry request is needed: they are verified all the same).
func cached(hs []v1.Hash, c cache) bool {
	for _, h := range hs {
		if c.get(h) == nil {
			return false
		}
	}
	return true
}

// RegistryOptions are o.Remote with o.Transport, bounded (remotelimit):
// the options of any other registry request made on a verification's
// behalf (promote's digest check).
func (o Options) RegistryOptions() []remote.Option {
	return append(slices.Clip(o.Remote), remote.WithTransport(remotelimit.New(baseTransport(o.Transport), registryLimits)))
}

// connect completes o.Remote for img's registry: the session's
// transport (its handshake made once per registry) or o.Transport, bounded
// either way, and one shared puller (without a session: one handshake for
// every request of a verification).
func (o *Options) connect(ctx context.Context, img name.Digest) error {
	opts := o.RegistryOptions()
	if o.Session != nil {
		r, err := o.Session.remote(ctx, img.Context())
		if err != nil {
			return err
		}
		opts = append(opts, r...)
	}
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return fmt.Errorf("registry options: %w", err)
	}
	o.Remote = append(opts, remote.Reuse(p))
	return nil
}

func parseImage(image string) (name.Digest, error) {
	d, err := name.NewDigest(image, name.StrictValidation)
	if err != nil {
		return name.Digest{}, &exitcode.InvalidInput{Err: fmt.Errorf("image %q: a digest reference (repository@sha256:...) is required: %w", image, err)}
	}
	return d, nil
}

// candidate is one bundle and what verifying it gave.
type candidate struct {
	digest string
	kind   string // of the verified statement, else of the unverified claim
	v      *verified
	stmt   *intoto.Statement
	fail   *exitcode.Refusal
}

func (c *candidate) ok() bool { return c.fail == nil }

// load verifies bundle d of img against pol: its bytes from the cache,
// else from held, else from the registry (what it reads is added to held;
// what verified and was not cached, to the cache). Wherever the bytes
// come from, they hash to d and are verified here.
func load(ctx context.Context, pol *Policy, img name.Digest, d v1.Hash, held map[v1.Hash][]byte, opts Options) (*candidate, error) {
	imgHash, err := v1.NewHash(img.DigestStr())
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("image %s: %w", img, err)}
	}
	c := &candidate{digest: d.String()}
	data := opts.cache.get(d)
	fromCache := data != nil
	if data == nil {
		data = held[d]
	}
	if data == nil {
		if data, err = fetchBundle(ctx, img, d, held, opts.Remote); errors.Is(err, errNoBlob) {
			c.fail = refuse(RuleEvidenceMissing, img.String(), c.digest, err)
			return c, nil
		}
		if err != nil {
			return nil, err
		}
	}
	held[d] = data
	// A verification summary counts only when the notifier's key signed
	// it (the policy's summary signer), never by the image's signers.
	signers, claimed := pol.signers, kindOf(claimedType(data))
	if claimed == KindVerificationSummary && pol.summary != nil {
		signers = []signer{*pol.summary}
	}
	v, rule, err := verifyBundle(signers, data)
	if err != nil {
		c.kind = claimed
		c.fail = refuse(rule, img.String(), c.digest, fmt.Errorf("%s: %w", statementOf(c.kind), err))
		return c, nil
	}
	if !fromCache {
		if err := opts.cache.put(d, data); err != nil {
			return nil, err
		}
	}
	c.v = v
	if c.stmt, err = parseStatement(v.Statement); err != nil {
		c.fail = refuse(RuleSignatureInvalid, img.String(), c.digest, err)
		return c, nil
	}
	c.kind = kindOf(c.stmt.GetPredicateType())
	if c.kind != claimed { // cannot be: the bundle's statement is what it claims
		c.fail = refusef(RuleSignatureInvalid, img.String(), c.digest, "the bundle's statement changed type while verified")
		return c, nil
	}
	if !hasSubject(c.stmt, imgHash.Hex) {
		c.fail = refusef(RuleAttestationSubject, img.String(), c.digest,
			"its %s statement is about %s, not about this image", c.stmt.GetPredicateType(), subjects(c.stmt))
	}
	return c, nil
}

// claimedType is the predicate type a bundle claims, unverified (for
// naming the kind of a bundle that failed).
func claimedType(data []byte) string {
	var b bundle.Bundle
	if b.UnmarshalJSON(data) != nil {
		return ""
	}
	env, err := b.Envelope()
	if err != nil || env == nil {
		return ""
	}
	s, err := env.Statement()
	if err != nil {
		return ""
	}
	return s.GetPredicateType()
}

func subjects(s *intoto.Statement) []string {
	var out []string
	for _, sub := range s.GetSubject() {
		for alg, hex := range sub.GetDigest() {
			out = append(out, alg+":"+hex)
		}
	}
	return out
}

// statementOf names the statement a bundle of kind claims to carry (its
// payload, unverified), for a refusal of its signature.
func statementOf(kind string) string {
	switch kind {
	case KindSignature:
		return "the signature statement"
	case KindProvenance:
		return "the provenance attestation"
	case KindSBOM:
		return "the SBOM attestation"
	case KindScan:
		return "the vulnerability scan attestation"
	case KindVerificationSummary:
		return "the verification summary"
	}
	return "a statement of no kind the policy knows"
}
