package trust

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
)

// ReadFile reads a repository-relative file (a key, a trusted root) the
// policy names, at the revision the policy was read from.
type ReadFile func(ctx context.Context, path string) ([]byte, error)

// Policy is a compiled trust policy: the environment's TrustPolicy with
// its keys and trusted roots loaded into sigstore-go verifiers.
type Policy struct {
	// Environment is the environment the policy belongs to.
	Environment string
	// Spec is the policy as written.
	Spec    v1alpha1.TrustPolicy
	signers []signer
	// summary verifies verification summaries (nil: none required).
	summary *signer
	hash    string
}

// signer is one entry of Spec.Signatures, ready to verify.
type signer struct {
	name     string // "publicKey keys/ci.pub", "keyless <identity> (<issuer>)"
	verifier *verify.Verifier
	identity *verify.CertificateIdentity // keyless only
	// key is a public-key signer's key, to say why a bundle failed (nil
	// for keyless).
	key *publicKey
}

// publicKey is a policy key: its verifier and its hint (the base64
// SHA-256 of its DER encoding, as sigstore-go and cosign write it in a
// bundle's verification material).
type publicKey struct {
	verifier signature.Verifier
	hint     string
}

// Compile loads the files of env's trust policy tp through read and builds
// its verifiers. A nil tp is the empty policy (nothing required). A file
// that cannot be read or parsed is invalid input naming the file and the
// policy field.
func Compile(ctx context.Context, env string, tp *v1alpha1.TrustPolicy, read ReadFile) (*Policy, error) {
	p := &Policy{Environment: env}
	if tp == nil {
		return p, nil
	}
	p.Spec = *tp.DeepCopy()
	// The hash covers the whole policy as written (every signer and
	// every predicate rule) and the content of every file it names.
	h := sha256.New()
	spec, err := json.Marshal(tp)
	if err != nil {
		return nil, fmt.Errorf("hashing the trust policy of %s: %w", env, err)
	}
	h.Write(spec)
	for i, s := range tp.Signatures {
		field := fmt.Sprintf("environments.%s.trust.signatures[%d]", env, i)
		sg, data, err := compileSigner(ctx, s, read)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		sum := sha256.Sum256(data)
		h.Write(sum[:])
		p.signers = append(p.signers, sg)
	}
	if a := tp.Attestations; a != nil && a.VerificationSummary != nil {
		field := fmt.Sprintf("environments.%s.trust.attestations.verificationSummary", env)
		// The notifier's key, or its keyless identity: parsed as a
		// signature's signer is.
		sg, data, err := compileSigner(ctx, a.VerificationSummary.Signer(), read)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		sum := sha256.Sum256(data)
		h.Write(sum[:])
		p.summary = &sg
	}
	p.hash = hex.EncodeToString(h.Sum(nil))
	return p, nil
}

// Hash identifies the policy: its spec as written (signers and predicate
// rules) and the content of every file it names (keys, trusted roots).
func (p *Policy) Hash() string { return p.hash }

// Requires reports whether the policy requires any evidence.
func (p *Policy) Requires() bool {
	return p != nil && (len(p.signers) > 0 || p.Spec.Attestations != nil)
}

func compileSigner(ctx context.Context, s v1alpha1.SignerPolicy, read ReadFile) (signer, []byte, error) {
	if s.PublicKey != "" {
		data, err := read(ctx, s.PublicKey)
		if err != nil {
			return signer{}, nil, exitcode.InvalidFile(s.PublicKey, fmt.Errorf("publicKey: %w", err))
		}
		v, key, err := keyVerifier(data)
		if err != nil {
			return signer{}, nil, exitcode.InvalidFile(s.PublicKey, fmt.Errorf("publicKey: %w", err))
		}
		return signer{name: "publicKey " + s.PublicKey, verifier: v, key: key}, data, nil
	}
	k := s.Keyless
	if k == nil {
		return signer{}, nil, &exitcode.InvalidInput{Err: errors.New("exactly one of publicKey and keyless")}
	}
	data, err := read(ctx, k.TrustedRoot)
	if err != nil {
		return signer{}, nil, exitcode.InvalidFile(k.TrustedRoot, fmt.Errorf("keyless.trustedRoot: %w", err))
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return signer{}, nil, exitcode.InvalidFile(k.TrustedRoot, fmt.Errorf("keyless.trustedRoot: %w", err))
	}
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if len(tr.RekorLogs()) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	v, err := verify.NewVerifier(tr, opts...)
	if err != nil {
		return signer{}, nil, exitcode.InvalidFile(k.TrustedRoot, fmt.Errorf("keyless.trustedRoot: %w", err))
	}
	if k.IdentityRegexp != "" {
		if err := environment.CheckIdentityRegexp(k.IdentityRegexp); err != nil {
			return signer{}, nil, &exitcode.InvalidInput{Err: fmt.Errorf("keyless.identityRegexp: %q: %w", k.IdentityRegexp, err)}
		}
	}
	id, err := verify.NewShortCertificateIdentity(k.Issuer, "", k.Identity, k.IdentityRegexp)
	if err != nil {
		return signer{}, nil, &exitcode.InvalidInput{Err: fmt.Errorf("keyless: %w", err)}
	}
	who := k.Identity
	if who == "" {
		who = "~" + k.IdentityRegexp
	}
	return signer{name: fmt.Sprintf("keyless %s (%s)", who, k.Issuer), verifier: v, identity: &id}, data, nil
}

// keyVerifier is a sigstore-go verifier of bundles signed with the PEM
// public key in data (any key hint: the policy names the one key).
func keyVerifier(data []byte) (*verify.Verifier, *publicKey, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not a PEM public key: %w", err)
	}
	sv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the public key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, nil, err
	}
	return v, &publicKey{verifier: sv, hint: base64.StdEncoding.EncodeToString(sum[:])}, nil
}

// ForEnvironment compiles the trust policy of env in the registry reg
// (refusing an environment reg does not list, rule environment-unknown),
// reading its files through read: the policy a gate into env verifies.
func ForEnvironment(ctx context.Context, reg *environment.Registry, env string, read ReadFile) (*Policy, error) {
	e, err := reg.Lookup(env)
	if err != nil {
		return nil, err
	}
	return Compile(ctx, env, e.Trust, read)
}
