//go:build e2e

package supplychain

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/signing"
	"github.com/throughline-dev/throughline/trust/trusttest"
	"github.com/throughline-dev/throughline/vsa"
)

// keylessSigstore is the install's own Sigstore and the identity the
// staging notifier signs as.
type keylessSigstore struct {
	// api is the staging cluster's API server, other another cluster's
	// whose tokens the same Fulcio certifies.
	api, other *testenv.APIServer
	sigstore   *testenv.Sigstore
	// issuer is the API server's service-account token issuer; identity
	// the notifier's service account as Fulcio certifies it.
	issuer, identity string
}

// startKeyless starts two real kube-apiservers (OIDC issuers: Fulcio's
// "kubernetes" issuer type reads their discovery and keys anonymously),
// the staging cluster's and another one's, and a real private Sigstore
// trusting both: Fulcio, Rekor v2, a timestamp authority
// (hack/sigstore.sh).
func startKeyless(t *testing.T, w *world) *keylessSigstore {
	t.Helper()
	api, other := testenv.StartAPIServer(t, testenv.APIServerOptions{}), testenv.StartAPIServer(t, testenv.APIServerOptions{})
	issuer, ca := api.OIDCIssuer(w.ctx)
	otherIssuer, otherCA := other.OIDCIssuer(w.ctx)
	ss := testenv.StartSigstore(t, testenv.SigstoreOptions{Issuers: []testenv.SigstoreIssuer{
		{URL: issuer, Type: "kubernetes", CA: ca}, {URL: otherIssuer, Type: "kubernetes", CA: otherCA}}})
	return &keylessSigstore{api: api, other: other, sigstore: ss, issuer: issuer,
		identity: "https://kubernetes.io/namespaces/throughline/serviceaccounts/throughline"}
}

// tokenFile is a projected token of the service account namespace/name
// for audience sigstore, in a file as the pod's volume holds it.
func (k *keylessSigstore) tokenFile(t *testing.T, w *world, api *testenv.APIServer, namespace, name string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(file, []byte(api.ServiceAccountToken(w.ctx, namespace, name, "sigstore")), 0o600))
	return file
}

// signer is the notifier's summary signer for the token in tokenFile,
// built as serve builds it (--notifier-summary-signing-config,
// --notifier-summary-identity-token-file).
func (k *keylessSigstore) signer(t *testing.T, tokenFile string) signing.Signer {
	t.Helper()
	s, err := notifier.SummarySigner(notifier.ServiceConfig{SummarySigningConfigFile: k.sigstore.SigningConfigFile,
		SummaryIdentityTokenFile: tokenFile})
	must(t, err)
	if s == nil || !strings.HasPrefix(s.Describe(), "keyless (Fulcio "+k.sigstore.FulcioURL) {
		t.Fatalf("the notifier's summary signer: %v, want keyless with Fulcio %s", s, k.sigstore.FulcioURL)
	}
	return s
}

// cosign verifies ref's summary with the real cosign against the
// install's trusted root, for the notifier's identity and issuer. The
// private Fulcio runs without a CT log: its certificates carry no SCT.
func (k *keylessSigstore) cosign(w *world, ref string) (int, string) {
	return w.cosignVerify(ref, "--trusted-root", k.sigstore.TrustedRootFile, "--certificate-identity", k.identity,
		"--certificate-oidc-issuer", k.issuer, "--insecure-ignore-sct")
}

// TestKeylessVerificationSummary: the staging notifier signs its
// verification summaries keyless against the install's own Sigstore, all
// real servers: a kube-apiserver issues its service account's projected
// token (audience sigstore), Fulcio certifies it (its "kubernetes" issuer
// type), Rekor v2 logs the signature and a timestamp authority dates it.
// Staging ACCEPTS an image; the notifier's publisher attaches the summary,
// found by digest; production's policy requires a summary signed by the
// notifier's identity (keyless{identity, issuer, trustedRoot}) and both
// throughline's gate (propose) and the real cosign (verify-attestation
// --trusted-root --certificate-identity --certificate-oidc-issuer) accept
// it. Forged ones are refused by both: a real certificate of another
// service account of the same cluster, a real certificate of the same
// service account of another cluster (another issuer) whose tokens the
// same Fulcio certifies, and a certificate for the notifier's very
// identity and issuer from another Sigstore's CA.
func TestKeylessVerificationSummary(t *testing.T) {
	w := newWorld(t)
	k := startKeyless(t, w)
	w.requireSummaryBy("          keyless:\n            identity: "+k.identity+"\n            issuer: "+k.issuer+
		"\n            trustedRoot: sigstore/throughline-root.json\n",
		map[string][]byte{"sigstore/throughline-root.json": k.sigstore.TrustedRoot})
	signer := k.signer(t, k.tokenFile(t, w, k.api, "throughline", "throughline"))

	image, _ := w.build(time.Hour)
	w.acceptInStaging(image, w.candidate(image))
	ref := digestRef(t, image)
	pub, _ := w.publishSummary(signer, image)
	d, err := name.NewDigest(ref)
	must(t, err)
	idx, err := remote.Referrers(d)
	must(t, err)
	im, err := idx.IndexManifest()
	must(t, err)
	found := false
	for _, m := range im.Manifests {
		found = found || m.Digest.String() == pub.Manifest && m.Annotations[trust.AnnotationPredicateType] == vsa.PredicateType
	}
	if !found {
		t.Fatalf("arrow keyless verification summary: referrers of %s %+v do not list %s", ref, im.Manifests, pub.Manifest)
	}
	// What was published: a Fulcio certificate, a Rekor v2 entry (no
	// integrated time) and the timestamp authority's timestamp.
	layer, err := remote.Layer(d.Context().Digest(pub.Bundle))
	must(t, err)
	rc, err := layer.Compressed()
	must(t, err)
	raw, err := io.ReadAll(rc)
	must(t, err)
	must(t, rc.Close())
	var pb protobundle.Bundle
	must(t, protojson.Unmarshal(raw, &pb))
	vm := pb.GetVerificationMaterial()
	tles := vm.GetTlogEntries()
	if vm.GetCertificate() == nil || len(tles) != 1 || tles[0].GetKindVersion().GetVersion() != "0.0.2" || tles[0].GetIntegratedTime() != 0 ||
		len(vm.GetTimestampVerificationData().GetRfc3161Timestamps()) != 1 {
		t.Fatalf("the keyless summary's bundle: want a certificate, one Rekor v2 entry and one signed timestamp:\n%s", raw)
	}

	if code, out := k.cosign(w, ref); code != 0 {
		t.Fatalf("cosign verify-attestation of the keyless summary: exit %d\n%s", code, out)
	}
	dir := w.clone()
	r := w.run(dir, "promote", "propose", "--repo", dir, "--app", "checkout", "--from", "staging", "--to", "production",
		"--trust-cache-dir", w.cache)
	if r.Code != 0 {
		t.Fatalf("arrow staging -> production propose with the keyless summary: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	for _, tc := range []struct {
		name string
		sign func(img name.Digest) []byte
		rule string
	}{
		{"signed by another service account", func(img name.Digest) []byte {
			other := k.signer(t, k.tokenFile(t, w, k.api, "apps", "checkout"))
			b, err := other.SignStatement(w.ctx, summaryOf(t, img, "staging", ""))
			must(t, err)
			return b
		}, trust.RuleSignatureIdentity},
		{"signed by the same service account of another cluster", func(img name.Digest) []byte {
			// The same Fulcio, Rekor and TSA; the same identity; only
			// the certificate's OIDC issuer differs.
			other := k.signer(t, k.tokenFile(t, w, k.other, "throughline", "throughline"))
			b, err := other.SignStatement(w.ctx, summaryOf(t, img, "staging", ""))
			must(t, err)
			return b
		}, trust.RuleSignatureIdentity},
		{"certified by another Sigstore", func(img name.Digest) []byte {
			return w.ci.SignKeylessV2(w.ci.Rogue, k.identity, k.issuer, summaryOf(t, img, "staging", ""), true)
		}, trust.RuleSignatureInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged, _ := w.build(time.Hour)
			fref := digestRef(t, forged)
			img, err := name.NewDigest(fref)
			must(t, err)
			b := tc.sign(img)
			if _, err := trust.Attach(w.ctx, fref, trust.BundleMediaType,
				map[string]string{trust.AnnotationPredicateType: vsa.PredicateType}, [][]byte{b}, nil); err != nil {
				t.Fatal(err)
			}
			code, out := k.cosign(w, fref)
			if code == 0 {
				t.Fatalf("cosign verified a summary %s:\n%s", tc.name, out)
			}
			t.Logf("cosign refuses a summary %s: exit %d: %s", tc.name, code, lastLine(out))
			code, stderr := w.trustVerify(fref)
			if code != 3 || !strings.Contains(stderr, tc.rule) || !strings.Contains(stderr, trusttest.DigestOf(b)) {
				t.Fatalf("throughline trust verify of a summary %s: exit %d, want 3 %s naming %s:\n%s", tc.name, code, tc.rule,
					trusttest.DigestOf(b), stderr)
			}
		})
	}
}
