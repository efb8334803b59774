// Package trust verifies an image's supply-chain evidence against an
// environment's trust policy (api/v1alpha1.TrustPolicy): the signatures of
// its digest and the in-toto attestations about it (SLSA provenance, SBOM,
// vulnerability scan), stored next to the image in its registry as
// Sigstore bundles (OCI 1.1 referrers, or the cosign tags
// sha256-<hex>.sig and sha256-<hex>.att).
//
// Compile reads a policy's keys and trusted roots (repository files, read
// by the caller at the base revision) into a *Policy. Verify discovers the
// evidence of an image digest and returns the *Evidence that satisfies the
// policy: the digest of every signature and attestation bundle it relied
// on, what a promotion record stores. VerifyRecorded re-verifies exactly
// those digests (fetched by digest, never a newer bundle found by tag)
// against another environment's policy. Every refusal is an
// *exitcode.Refusal (exit 3) whose rule is one of the Rule constants,
// naming the image and the evidence digest.
//
// Cryptography is sigstore-go's (bundle, certificate chain, transparency log
// and timestamp verification); this package checks what the verified
// statements say: subject digest, builder, source repository and commit,
// scan age and findings. The bytes of a bundle that verified are cached
// on disk by their digest (Options.CacheDir), so a warm VerifyRecorded
// makes no registry request; the cache saves requests, never a proof:
// bytes read from it must hash to the requested digest and are verified
// against the policy on every call, as fetched ones are. It does not read
// Git, sign anything (trust/signing
// does), or talk to a Sigstore service: trusted roots are files.
//
// A gate over many images needs few registry requests: Options.Seal (at
// candidacy) pushes one evidence manifest per image whose layer
// descriptors embed the verified bundles, recorded as Evidence.Manifest;
// VerifyRecorded with Options.Manifest reads every recorded bundle from it
// with one request (each still checked against its recorded digest), and
// one Session per gate shakes hands once per registry. Attach and
// AttachTag push bundles next to an image (what `make release` does).
package trust
