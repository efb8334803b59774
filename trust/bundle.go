package trust

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// verified is a bundle that verified: the in-toto statement it signs (the
// DSSE payload, as signed) and the policy's signers it verified with
// (indexes into Policy.signers).
type verified struct {
	Statement []byte
	Signers   []int
}

// verifyBundle verifies the Sigstore bundle data (JSON) with each of
// signers. It fails (rule signature-invalid or signature-identity) when no
// signer verifies it; an identity mismatch is reported over an invalid
// signature, as the closer miss.
func verifyBundle(signers []signer, data []byte) (*verified, string, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, RuleSignatureInvalid, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	env, err := b.Envelope()
	if err != nil || env == nil {
		return nil, RuleSignatureInvalid, errors.New("the bundle holds no DSSE envelope (an in-toto statement is required)")
	}
	if _, err := env.Statement(); err != nil {
		return nil, RuleSignatureInvalid, fmt.Errorf("the bundle's payload is not an in-toto statement: %w", err)
	}
	v := &verified{}
	rule, errs := RuleSignatureInvalid, []error(nil)
	for i, s := range signers {
		opts := []verify.PolicyOption{verify.WithKey()}
		if s.identity != nil {
			opts = []verify.PolicyOption{verify.WithCertificateIdentity(*s.identity)}
		}
		_, err := s.verifier.Verify(&b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), opts...))
		if err != nil {
			var idErr *verify.ErrNoMatchingCertificateIdentity
			if errors.As(err, &idErr) {
				rule = RuleSignatureIdentity
			}
			if why := s.key.why(&b, env); why != nil {
				err = why // sigstore's "accepted signatures do not match threshold" says neither
			}
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
			continue
		}
		v.Signers = append(v.Signers, i)
	}
	if len(v.Signers) == 0 {
		if len(errs) == 0 {
			return nil, RuleSignatureInvalid, errors.New("the policy lists no signer")
		}
		return nil, rule, fmt.Errorf("no signer of the policy verifies it: %w", errors.Join(errs...))
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, RuleSignatureInvalid, fmt.Errorf("decoding the DSSE payload: %w", err)
	}
	v.Statement = payload
	return v, "", nil
}

// why says why a bundle that k's signer did not verify fails with k:
// signed by another key (its key hint, when it names one, is not k's), or
// a signature that does not verify its payload with k (a payload changed
// after signing, or another key under k's hint). Nil when k is nil (a
// keyless signer) or when neither holds (sigstore's error then stands).
func (k *publicKey) why(b *bundle.Bundle, env *bundle.Envelope) error {
	if k == nil {
		return nil
	}
	vm := b.GetVerificationMaterial()
	if vm.GetCertificate() != nil || vm.GetX509CertificateChain() != nil {
		return fmt.Errorf("signed keyless (a certificate), not with the key %s", k.hint)
	}
	hint := vm.GetPublicKey().GetHint()
	if hint != "" && hint != k.hint {
		return fmt.Errorf("signed by the key %s, not the trusted key %s", hint, k.hint)
	}
	raw := env.RawEnvelope()
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil
	}
	pae := fmt.Appendf(nil, "DSSEv1 %d %s %d ", len(raw.PayloadType), raw.PayloadType, len(payload))
	pae = append(pae, payload...)
	for _, sig := range raw.Signatures {
		data, err := base64.StdEncoding.DecodeString(sig.Sig)
		if err == nil && k.verifier.VerifySignature(bytes.NewReader(data), bytes.NewReader(pae)) == nil {
			return nil // the signature verifies: something else failed
		}
	}
	if hint == "" {
		return fmt.Errorf("its signature does not verify its payload with the trusted key %s (the bundle names no key: "+
			"signed by another key, or its payload changed after signing)", k.hint)
	}
	return fmt.Errorf("its signature does not verify its payload with the key %s it names, the trusted one "+
		"(its payload changed after signing)", k.hint)
}
