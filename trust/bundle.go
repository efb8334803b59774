package trust

import (
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

// verifyBundle verifies the Sigstore bundle data (JSON) with each of p's
// signers. It fails (rule signature-invalid or signature-identity) when no
// signer verifies it; an identity mismatch is reported over an invalid
// signature, as the closer miss.
func verifyBundle(p *Policy, data []byte) (*verified, string, error) {
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
	for i, s := range p.signers {
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
