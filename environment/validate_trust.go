package environment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// checkTrust checks an environment's trust policy (field is
// "environments.<name>"): signers with exactly one of a key and a keyless
// identity, files confined to the repository, an identity regexp that
// compiles and is anchored at both ends, known SBOM formats and severities, a positive scan age.
func checkTrust(field string, t *v1alpha1.TrustPolicy) error {
	if t == nil {
		return nil
	}
	field += ".trust"
	if a := t.Attestations; len(t.Signatures) == 0 && a != nil && (a.Provenance != nil || a.SBOM != nil || a.VulnerabilityScan != nil) {
		return fmt.Errorf("%s.signatures: attestations are required but no signer is listed to verify them", field)
	}
	for i, s := range t.Signatures {
		if err := checkSigner(fmt.Sprintf("%s.signatures[%d]", field, i), s); err != nil {
			return err
		}
	}
	if t.Attestations == nil {
		return nil
	}
	return checkAttestations(field+".attestations", t.Attestations)
}

func checkSigner(field string, s v1alpha1.SignerPolicy) error {
	switch {
	case (s.PublicKey == "") == (s.Keyless == nil):
		return fmt.Errorf("%s: exactly one of publicKey and keyless", field)
	case s.PublicKey != "":
		if err := checkRelative(s.PublicKey); err != nil {
			return fmt.Errorf("%s.publicKey: %q: %w", field, s.PublicKey, err)
		}
		return nil
	}
	k := s.Keyless
	field += ".keyless"
	switch {
	case (k.Identity == "") == (k.IdentityRegexp == ""):
		return fmt.Errorf("%s: exactly one of identity and identityRegexp", field)
	case strings.TrimSpace(k.Issuer) == "":
		return fmt.Errorf("%s.issuer: required (the certificate's OIDC issuer)", field)
	}
	if k.IdentityRegexp != "" {
		if err := checkIdentityRegexp(field+".identityRegexp", k.IdentityRegexp); err != nil {
			return err
		}
	}
	if err := checkRelative(k.TrustedRoot); err != nil {
		return fmt.Errorf("%s.trustedRoot: %q: %w", field, k.TrustedRoot, err)
	}
	return nil
}

func checkAttestations(field string, a *v1alpha1.AttestationPolicy) error {
	if p := a.Provenance; p != nil {
		if len(p.Builders) == 0 || slices.Contains(p.Builders, "") {
			return fmt.Errorf("%s.provenance.builders: at least one builder id, none empty", field)
		}
		if len(p.SourceRepositories) == 0 || slices.Contains(p.SourceRepositories, "") {
			return fmt.Errorf("%s.provenance.sourceRepositories: at least one repository URI, none empty", field)
		}
	}
	if s := a.SBOM; s != nil {
		for i, f := range s.Formats {
			if !slices.Contains(v1alpha1.SBOMFormats(), f) {
				return fmt.Errorf("%s.sbom.formats[%d]: %q: one of %s", field, i, f, strings.Join(v1alpha1.SBOMFormats(), ", "))
			}
		}
	}
	if v := a.VerificationSummary; v != nil {
		if !validName.MatchString(v.Environment) {
			return fmt.Errorf("%s.verificationSummary.environment: %q: the name of the environment the digest must have been accepted in",
				field, v.Environment)
		}
		if err := checkSigner(field+".verificationSummary", v.Signer()); err != nil {
			return err
		}
	}
	if v := a.VulnerabilityScan; v != nil {
		if !slices.Contains(v1alpha1.Severities(), v.MaxSeverity) {
			return fmt.Errorf("%s.vulnerabilityScan.maxSeverity: %q: one of %s", field, v.MaxSeverity, strings.Join(v1alpha1.Severities(), ", "))
		}
		if v.MaxAge.Duration <= 0 {
			return fmt.Errorf("%s.vulnerabilityScan.maxAge: %s: must be positive", field, v.MaxAge.Duration)
		}
	}
	return nil
}
