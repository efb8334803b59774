package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrustPolicy is the supply-chain evidence an environment requires of an
// image (package trust verifies it): who must have signed the image's
// digest, and which attestations about that digest must exist, signed by
// one of those signers. Every file it names is a repository-relative path
// read at the base revision, like allowedSigners.
type TrustPolicy struct {
	// Signatures are the required signatures: the image needs one valid
	// signature by EACH entry (a typical policy lists one signer, the CI).
	Signatures []SignerPolicy `json:"signatures,omitempty"`
	// Attestations are the in-toto attestations the image needs, each
	// signed by one of Signatures' signers with the image digest as its
	// subject.
	Attestations *AttestationPolicy `json:"attestations,omitempty"`
}

// Files are the repository files t names (public keys, trusted roots):
// what verifies an image is their content as much as t's fields.
func (t *TrustPolicy) Files() []string {
	if t == nil {
		return nil
	}
	signers := t.Signatures
	if t.Attestations != nil && t.Attestations.VerificationSummary != nil {
		signers = append(slices.Clip(signers), t.Attestations.VerificationSummary.Signer())
	}
	var out []string
	for _, s := range signers {
		switch {
		case s.PublicKey != "":
			out = append(out, s.PublicKey)
		case s.Keyless != nil && s.Keyless.TrustedRoot != "":
			out = append(out, s.Keyless.TrustedRoot)
		}
	}
	return out
}

// SignerPolicy is one signer: a public key, or a keyless (Fulcio
// certificate) identity. Exactly one of PublicKey and Keyless is set.
type SignerPolicy struct {
	// PublicKey is the repository-relative path of the signer's PEM public
	// key (cosign.pub).
	PublicKey string `json:"publicKey,omitempty"`
	// Keyless is the signer's certificate identity.
	Keyless *KeylessSigner `json:"keyless,omitempty"`
}

// KeylessSigner is a keyless signer: the certificate's subject alternative
// name (Identity exactly, or IdentityRegexp), its OIDC issuer, and the
// Sigstore trusted root (CA, transparency log, timestamp authorities) the
// certificate must chain to.
type KeylessSigner struct {
	// Identity is the exact subject alternative name (a workflow URI, an
	// e-mail address).
	Identity string `json:"identity,omitempty"`
	// IdentityRegexp matches the whole subject alternative name (RE2,
	// anchored at both ends or refused:
	// ^https://github\.com/example/app/\.github/workflows/release\.yaml@refs/heads/main$).
	IdentityRegexp string `json:"identityRegexp,omitempty"`
	// Issuer is the exact OIDC issuer of the certificate
	// (https://token.actions.githubusercontent.com).
	Issuer string `json:"issuer"`
	// TrustedRoot is the repository-relative path of the Sigstore trusted
	// root (trusted_root.json); nothing is fetched from the network.
	TrustedRoot string `json:"trustedRoot"`
}

// AttestationPolicy names the required attestations; a nil entry is not
// required.
type AttestationPolicy struct {
	// Provenance requires a SLSA provenance v1 attestation
	// (https://slsa.dev/provenance/v1).
	Provenance *ProvenancePolicy `json:"provenance,omitempty"`
	// SBOM requires a software bill of materials attestation.
	SBOM *SBOMPolicy `json:"sbom,omitempty"`
	// VulnerabilityScan requires a vulnerability scan attestation
	// (https://in-toto.io/attestation/vulns/v0.2).
	VulnerabilityScan *ScanPolicy `json:"vulnerabilityScan,omitempty"`
	// VerificationSummary requires a SLSA verification summary
	// (https://slsa.dev/verification_summary/v1) saying the digest was
	// ACCEPTED in another environment: what throughline's notifier
	// publishes next to the image (serve --notifier-summary-key-file, or
	// keyless: --notifier-summary-signing-config).
	// It is signed with its own key, not by Signatures' signers, and
	// found next to the image at every gate (it is published after
	// candidacy, so it is never among the recorded evidence).
	VerificationSummary *SummaryPolicy `json:"verificationSummary,omitempty"`
}

// SummaryPolicy is what the verification summary must say, and who must
// have signed it: exactly one of PublicKey and Keyless.
type SummaryPolicy struct {
	// Environment is the environment the digest must have been accepted
	// in (the summary's policy.uri is
	// https://throughline.dev/environments/<environment>).
	Environment string `json:"environment"`
	// PublicKey is the repository-relative path of the PEM public key of
	// the notifier that publishes the summaries (the public half of its
	// --notifier-summary-key-file).
	PublicKey string `json:"publicKey,omitempty"`
	// Keyless is the notifier's certificate identity when it signs
	// keyless (--notifier-summary-signing-config): the Fulcio
	// certificate's subject (a Kubernetes service account:
	// https://kubernetes.io/namespaces/<namespace>/serviceaccounts/<name>),
	// its OIDC issuer and the trusted root of the install's Sigstore
	// (Fulcio, Rekor, timestamp authority). A bundle must carry the
	// transparency log entries and the timestamps that trusted root
	// calls for (Rekor v2 entries have no integrated time: a timestamp
	// authority's signed timestamp then dates the certificate).
	Keyless *KeylessSigner `json:"keyless,omitempty"`
}

// Signer is the signer the summary must be signed by, as a signature
// signer is written.
func (s *SummaryPolicy) Signer() SignerPolicy {
	return SignerPolicy{PublicKey: s.PublicKey, Keyless: s.Keyless}
}

// ProvenancePolicy is what the SLSA provenance must say.
type ProvenancePolicy struct {
	// Builders are the accepted builder ids (runDetails.builder.id), exactly.
	Builders []string `json:"builders"`
	// SourceRepositories are the accepted source repositories: one of the
	// provenance's resolved dependencies is one of them (git+ prefix and
	// @ref suffix ignored) at the candidate's source commit.
	SourceRepositories []string `json:"sourceRepositories"`
}

// SBOMPolicy is the SBOM requirement.
type SBOMPolicy struct {
	// Formats are the accepted formats: cyclonedx, spdx (empty: either).
	Formats []string `json:"formats,omitempty"`
}

// ScanPolicy is what the vulnerability scan must say.
type ScanPolicy struct {
	// MaxSeverity is the highest severity a finding may have: none, low,
	// medium, high or critical ("high": a critical finding refuses the
	// image; "none": any finding does).
	MaxSeverity string `json:"maxSeverity"`
	// MaxAge is how long ago the scan may have finished
	// (metadata.scanFinishedOn) when a gate checks it.
	MaxAge metav1.Duration `json:"maxAge"`
}

// Severities are the scan severities from lowest to highest: the values of
// ScanPolicy.MaxSeverity.
func Severities() []string { return []string{"none", "low", "medium", "high", "critical"} }

// SBOMFormats are the values of SBOMPolicy.Formats.
func SBOMFormats() []string { return []string{"cyclonedx", "spdx"} }
