// Package supplychain is the end-to-end test of supply-chain evidence
// through the throughline binary, against a real registry (CNCF
// distribution, internal/testenv.StartRegistry) and real Git (a bare
// repository served over smart HTTP, real clones): a "CI" step pushes an
// image and attaches its signature and attestations (SLSA provenance, an
// SBOM, a vulnerability scan: Sigstore bundles signed with a generated key,
// under cosign's tags), `throughline promote candidate` (CI's entry point)
// verifies them against staging's trust policy and records them by digest
// on the candidacy's branch, which is merged; staging accepts the image (the
// reconciler, the kubelet and the notifier are PLAYED: their record and
// evidence file are written on main), and every gate on the way to
// production re-verifies exactly the recorded bundles against production's
// policy: an image with a fresh scan goes through propose, verify, approve
// and the PR gate; an image whose scan is two days old, fine for staging
// (168h), is refused by production (24h). TestVerificationSummary runs the
// notifier's publication of staging's acceptance (notifier.Summaries): the
// signed SLSA verification summary lands next to the digest in the registry
// and in the evidence, production's policy requires it, and throughline's
// gates and a real cosign (verify-attestation, THROUGHLINE_COSIGN_BIN,
// hack/cosign.sh) accept it and refuse forged ones. Build tag e2e:
//
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/supplychain/
package supplychain
