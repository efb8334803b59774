package trust

import (
	"fmt"

	"github.com/throughline-dev/throughline/exitcode"
)

// The refusal rules of package trust (exitcode.Refusal.Rule).
const (
	// RuleSignatureMissing: no signature bundle by a required signer.
	RuleSignatureMissing = "signature-missing"
	// RuleSignatureInvalid: a bundle does not verify (tampered, another key,
	// a certificate that does not chain to the policy's trusted root).
	RuleSignatureInvalid = "signature-invalid"
	// RuleSignatureIdentity: a valid certificate of another identity or
	// OIDC issuer than the policy's.
	RuleSignatureIdentity = "signature-identity"
	// RuleAttestationMissing: no verified attestation of a required kind.
	RuleAttestationMissing = "attestation-missing"
	// RuleAttestationSubject: a verified statement whose subject is not
	// this image's digest (a swapped attestation).
	RuleAttestationSubject = "attestation-subject"
	// RuleProvenanceBuilder: a provenance by a builder the policy does not list.
	RuleProvenanceBuilder = "provenance-builder"
	// RuleProvenanceSource: a provenance from another source repository or commit.
	RuleProvenanceSource = "provenance-source"
	// RuleSBOMFormat: an SBOM in a format the policy does not accept.
	RuleSBOMFormat = "sbom-format"
	// RuleScanTooOld: a scan that finished longer ago than the policy's maxAge.
	RuleScanTooOld = "scan-too-old"
	// RuleScanFindings: a scan with a finding above the policy's maxSeverity.
	RuleScanFindings = "scan-findings"
	// RuleScanUnreadable: a scan predicate that cannot be read.
	RuleScanUnreadable = "scan-unreadable"
	// RuleSummaryEnvironment: a verification summary of an acceptance in
	// another environment than the policy's (policy.uri), or unreadable.
	RuleSummaryEnvironment = "summary-environment"
	// RuleSummaryResult: a verification summary whose verificationResult
	// is not PASSED.
	RuleSummaryResult = "summary-result"
	// RuleEvidenceMissing: evidence recorded at candidacy that the registry
	// no longer has.
	RuleEvidenceMissing = "evidence-missing"
)

// refuse is a refusal of rule naming the image and the evidence digest
// (empty: none found); its message names the rule too:
// "<image>: evidence <digest>: <rule>: <err>".
func refuse(rule, image, evidence string, err error) *exitcode.Refusal {
	r := &exitcode.Refusal{Rule: rule, Object: image, Reason: rule, Err: err}
	if evidence != "" {
		r.Field = "evidence " + evidence
	}
	return r
}

func refusef(rule, image, evidence, format string, args ...any) *exitcode.Refusal {
	return refuse(rule, image, evidence, fmt.Errorf(format, args...))
}
