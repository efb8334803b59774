// Package vsa makes, signs and publishes the verification summary of an
// acceptance: the in-toto statement with the SLSA Verification Summary
// predicate (https://slsa.dev/verification_summary/v1) that says a digest
// was ACCEPTED in an environment, so that tools other than throughline
// (admission controllers, auditors, other pipelines, cosign
// verify-attestation) can require it.
//
// Summary holds what a summary says: the image digest and chart digests
// (its subjects), the verifier, the environment (policy.uri is
// trust.SummaryPolicyURI(env)), the time, the policy it was judged by
// (the trust policy's hash as policy.digest; the checks file hash), the
// input attestations' digests, the rendered hash and the acceptance
// commit (the last ones also in a "throughline" extension field of the
// predicate, which SLSA consumers ignore). Statement encodes it as
// canonical JSON (RFC 8785): the same summary is always the same bytes.
//
// Publisher signs a statement with a key (trust/signing, a Sigstore bundle
// with a DSSE envelope) and attaches it to the image as an OCI 1.1
// referrer (trust.Attach: the referrers API, else the referrers tag
// sha256-<hex>, as cosign does). It is idempotent: a referrer of the image
// whose bundle signs the same statement is found and returned, nothing is
// pushed again. Registry failures are retried with backoff.
//
// Package trust verifies summaries (the verificationSummary attestation of
// a trust policy); this package does not verify, read Git or log.
package vsa
