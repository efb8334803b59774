// Package trusttest makes supply-chain evidence for tests: an in-process
// registry (go-containerregistry's, counting requests) or a given one,
// images pushed to it, in-toto statements (signature, SLSA provenance,
// SBOM, vulnerability scan), Sigstore bundles signed with generated keys or
// keyless against sigstore-go's in-process test Sigstore (a
// VirtualSigstore: test CA, transparency log and timestamp authority, all
// offline), attached as OCI 1.1 referrers or under cosign's tags, and the
// repository files (PEM key, trusted_root.json) a trust policy names. It
// is for tests only: it links sigstore-go's test CA.
package trusttest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// The CI's identities and what its provenance says.
const (
	CIIdentity   = "https://github.com/example/checkout/.github/workflows/release.yaml@refs/heads/main"
	CIIssuer     = "https://token.actions.githubusercontent.com"
	BuilderID    = "https://github.com/actions/runner/github-hosted"
	SourceRepo   = "https://github.com/example/checkout"
	SourceCommit = "0123456789abcdef0123456789abcdef01234567"
)

// Formats (as package trust reads them; repeated here so that trust's own
// tests can use this package).
const (
	PredicateSignature      = "https://sigstore.dev/cosign/sign/v1"
	PredicateSLSAProvenance = "https://slsa.dev/provenance/v1"
	PredicateVulns          = "https://in-toto.io/attestation/vulns/v0.2"
	PredicateCycloneDX      = "https://cyclonedx.org/bom"
	PredicateSPDX           = "https://spdx.dev/Document"
	PredicateSummary        = "https://slsa.dev/verification_summary/v1"
	BundleMediaType         = "application/vnd.dev.sigstore.bundle.v0.3+json"
	AnnotationPredicateType = "dev.sigstore.bundle.predicateType"
	intotoPayload           = "application/vnd.in-toto+json"
)

// World is a registry (go-containerregistry's in-process one, counting
// requests), the CI's key and keyless identity (a VirtualSigstore: test
// CA, transparency log and TSA, offline), an attacker's key and Sigstore,
// and the repository files a policy names.
type World struct {
	T testing.TB
	// Host is the registry's host:port.
	Host string
	// Requests counts the requests the in-process registry served.
	Requests atomic.Int64
	// Referrers: the registry answers the referrers API and Attach stores
	// bundles as referrers; else under cosign's tag sha256-<hex>.att.
	Referrers bool
	// Key is the CI's key (its PEM is Files["keys/ci.pub"]), OtherKey an
	// attacker's.
	Key, OtherKey *sign.EphemeralKeypair
	// Notifier is the key of the notifier that signs verification
	// summaries (its PEM is Files["keys/throughline.pub"]).
	Notifier *sign.EphemeralKeypair
	// Sigstore is the CI's keyless Sigstore (its trusted root is
	// Files["sigstore/trusted_root.json"]), Rogue an attacker's.
	Sigstore, Rogue *ca.VirtualSigstore
	// Files are the repository files a policy names.
	Files map[string][]byte
	// Now is the test's clock.
	Now time.Time
}

// New starts a registry; referrers: it answers the OCI 1.1 referrers
// API and bundles are attached as referrers, else through cosign's tags.
func New(t testing.TB, referrers bool) *World {
	t.Helper()
	w := &World{T: t, Referrers: referrers, Files: map[string][]byte{}, Now: time.Now()}
	reg := registry.New(registry.WithReferrersSupport(referrers), registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.Requests.Add(1)
		reg.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.Host = strings.TrimPrefix(srv.URL, "http://")
	w.keys()
	return w
}

// keys makes w's keys, Sigstores and policy files.
func (w *World) keys() {
	t := w.T
	t.Helper()
	var err error
	if w.Key, err = sign.NewEphemeralKeypair(nil); err != nil {
		t.Fatal(err)
	}
	if w.OtherKey, err = sign.NewEphemeralKeypair(nil); err != nil {
		t.Fatal(err)
	}
	if w.Notifier, err = sign.NewEphemeralKeypair(nil); err != nil {
		t.Fatal(err)
	}
	npem, err := w.Notifier.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	w.Files["keys/throughline.pub"] = []byte(npem)
	if w.Sigstore, err = ca.NewVirtualSigstore(); err != nil {
		t.Fatal(err)
	}
	if w.Rogue, err = ca.NewVirtualSigstore(); err != nil {
		t.Fatal(err)
	}
	pem, err := w.Key.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	w.Files["keys/ci.pub"] = []byte(pem)
	w.Files["sigstore/trusted_root.json"] = TrustedRootJSON(t, w.Sigstore)
}

// TrustedRootJSON is vs as a trusted_root.json file.
func TrustedRootJSON(t testing.TB, vs *ca.VirtualSigstore) []byte {
	t.Helper()
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), rawLogIDs(t, vs.CTLogs()),
		vs.TimestampingAuthorities(), rawLogIDs(t, vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// rawLogIDs fixes the test CA's log IDs for serialization: it keeps a
// log's ID as its hex string's bytes, a trusted root file holds the raw
// key ID (the map key, hex-decoded).
func rawLogIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	t.Helper()
	for id, l := range logs {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		l.ID = raw
	}
	return logs
}

// Read is the policy's ReadFile over w.Files.
func (w *World) Read(_ context.Context, p string) ([]byte, error) {
	if d, ok := w.Files[p]; ok {
		return d, nil
	}
	return nil, fs.ErrNotExist
}

// Image pushes a random image and returns its digest reference.
func (w *World) Image(repo string) name.Digest {
	w.T.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		w.T.Fatal(err)
	}
	tag, err := name.NewTag(w.Host + "/" + repo + ":latest")
	if err != nil {
		w.T.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		w.T.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		w.T.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

// Statement is an in-toto v1 statement about the sha256 digest hex.
func Statement(hex, predicateType string, predicate any) []byte {
	data, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "image", "digest": map[string]string{"sha256": hex}}},
		"predicateType": predicateType,
		"predicate":     predicate,
	})
	if err != nil {
		panic(err)
	}
	return data
}

// Signature is the image signature statement of img.
func Signature(img name.Digest) []byte {
	return Statement(Hex(img), PredicateSignature, map[string]any{})
}

// Provenance is a SLSA provenance v1 statement about img.
func Provenance(img name.Digest, builder, repo, commit string) []byte {
	return Statement(Hex(img), PredicateSLSAProvenance, map[string]any{
		"buildDefinition": map[string]any{
			"buildType":          "https://actions.github.io/buildtypes/workflow/v1",
			"externalParameters": map[string]any{"workflow": map[string]any{"repository": repo}},
			"resolvedDependencies": []any{map[string]any{"uri": "git+" + repo + "@refs/heads/main",
				"digest": map[string]string{"gitCommit": commit}}},
		},
		"runDetails": map[string]any{"builder": map[string]any{"id": builder}},
	})
}

// SBOM is an SBOM statement about img of predicateType.
func SBOM(img name.Digest, predicateType string) []byte {
	return Statement(Hex(img), predicateType, map[string]any{"bomFormat": "CycloneDX", "specVersion": "1.5"})
}

// Scan is a vulns v0.2 statement finished at finished with findings
// (id -> severity score).
func Scan(img name.Digest, finished time.Time, findings map[string]string) []byte {
	result := []any{}
	for id, score := range findings {
		result = append(result, map[string]any{"id": id, "severity": []any{map[string]string{"method": "nvd", "score": score}}})
	}
	return Statement(Hex(img), PredicateVulns, map[string]any{
		"scanner": map[string]any{"uri": "pkg:github/aquasecurity/trivy@v0.50.0", "result": result,
			"db": map[string]any{"lastUpdate": finished.UTC().Format(time.RFC3339)}},
		"metadata": map[string]any{"scanStartedOn": finished.Add(-time.Minute).UTC().Format(time.RFC3339),
			"scanFinishedOn": finished.UTC().Format(time.RFC3339)},
	})
}

// Summary is a SLSA verification summary statement saying img was
// accepted in env with result (PASSED, FAILED), as throughline's notifier
// writes it (written here by hand: package vsa's own encoding is checked
// against it).
func Summary(img name.Digest, env, result string) []byte {
	return Statement(Hex(img), PredicateSummary, map[string]any{
		"verifier":           map[string]any{"id": "https://throughline.dev/notifier"},
		"timeVerified":       "2026-12-07T06:00:00Z",
		"resourceUri":        "oci://" + img.String(),
		"policy":             map[string]any{"uri": "https://throughline.dev/environments/" + env},
		"verificationResult": result,
		"verifiedLevels":     []string{"THROUGHLINE_ACCEPTED"},
		"throughline":        map[string]any{"environment": env},
	})
}

// SummaryPolicy is KeyPolicy that also requires a verification summary
// of an acceptance in env signed with the notifier's key.
func SummaryPolicy(maxAge time.Duration, env string) *v1alpha1.TrustPolicy {
	tp := KeyPolicy(maxAge)
	tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: env, PublicKey: "keys/throughline.pub"}
	return tp
}

// Identity and issuer of the notifier's keyless certificates (a
// Kubernetes service account's projected token), and the trusted root of
// the install's own Sigstore (SummaryKeylessPolicy).
const (
	NotifierIdentity    = "https://kubernetes.io/namespaces/throughline/serviceaccounts/throughline"
	NotifierIssuer      = "https://kubernetes.default.svc.cluster.local"
	NotifierTrustedRoot = "sigstore/private_root.json"
)

// SummaryKeylessPolicy is KeyPolicy that also requires a verification
// summary of an acceptance in env signed keyless by the notifier's
// identity, by the Sigstore whose trusted root is Files[NotifierTrustedRoot].
func SummaryKeylessPolicy(maxAge time.Duration, env string) *v1alpha1.TrustPolicy {
	tp := KeyPolicy(maxAge)
	tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: env, Keyless: &v1alpha1.KeylessSigner{
		Identity: NotifierIdentity, Issuer: NotifierIssuer, TrustedRoot: NotifierTrustedRoot}}
	return tp
}

// Hex is the sha256 hex of img.
func Hex(img name.Digest) string { return strings.TrimPrefix(img.DigestStr(), "sha256:") }

// SignKey is a bundle of stmt signed with kp (a public-key bundle, as
// cosign attest --key --new-bundle-format makes).
func (w *World) SignKey(kp *sign.EphemeralKeypair, stmt []byte) []byte {
	w.T.Helper()
	pb, err := sign.Bundle(&sign.DSSEData{Data: stmt, PayloadType: intotoPayload}, kp, sign.BundleOptions{})
	if err != nil {
		w.T.Fatal(err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		w.T.Fatal(err)
	}
	return data
}

// SignKeyless is a keyless bundle of stmt: a certificate for identity and
// issuer from vs's CA, its transparency log entry (inclusion proof and
// promise) and timestamp.
func (w *World) SignKeyless(vs *ca.VirtualSigstore, identity, issuer string, stmt []byte) []byte {
	w.T.Helper()
	ent, err := vs.AttestAtTime(identity, issuer, stmt, time.Now().Add(time.Minute), true)
	if err != nil {
		w.T.Fatal(err)
	}
	return w.keylessBundle(ent, func(e *tlog.Entry) *protorekor.TransparencyLogEntry { return w.tlogEntry(vs, e) }, true)
}

// SignKeylessV2 is a keyless bundle of stmt as a private Sigstore of
// Fulcio, Rekor v2 and a timestamp authority makes it: a certificate for
// identity and issuer from vs's CA, a Rekor v2 entry (an inclusion proof
// and checkpoint, no integrated time, no promise) and, when timestamped,
// the timestamp authority's signed timestamp (without it nothing dates
// the short-lived certificate).
func (w *World) SignKeylessV2(vs *ca.VirtualSigstore, identity, issuer string, stmt []byte, timestamped bool) []byte {
	w.T.Helper()
	ent, err := vs.AttestHashedRekordV2(identity, issuer, stmt)
	if err != nil {
		w.T.Fatal(err)
	}
	return w.keylessBundle(ent, func(e *tlog.Entry) *protorekor.TransparencyLogEntry {
		tle := e.TransparencyLogEntry()
		tle.IntegratedTime = 0 // Rekor v2 keeps none
		return tle
	}, timestamped)
}

// keylessBundle is ent's signed envelope as a bundle: its certificate,
// its log entries as entry makes them and, when timestamped, its
// timestamp authority's signed timestamps.
func (w *World) keylessBundle(ent *ca.TestEntity, entry func(*tlog.Entry) *protorekor.TransparencyLogEntry, timestamped bool) []byte {
	w.T.Helper()
	vc, err := ent.VerificationContent()
	if err != nil {
		w.T.Fatal(err)
	}
	sc, err := ent.SignatureContent()
	if err != nil {
		w.T.Fatal(err)
	}
	env := sc.(*bundle.Envelope).RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		w.T.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		w.T.Fatal(err)
	}
	entries, err := ent.TlogEntries()
	if err != nil {
		w.T.Fatal(err)
	}
	tles := make([]*protorekor.TransparencyLogEntry, 0, len(entries))
	for _, e := range entries {
		tles = append(tles, entry(e))
	}
	var rfc []*protocommon.RFC3161SignedTimestamp
	if timestamped {
		tss, err := ent.Timestamps()
		if err != nil {
			w.T.Fatal(err)
		}
		for _, ts := range tss {
			rfc = append(rfc, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
		}
	}
	pb := &protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{
				Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
			TlogEntries:               tles,
			TimestampVerificationData: &protobundle.TimestampVerificationData{Rfc3161Timestamps: rfc},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType,
			Signatures: []*protodsse.Signature{{Sig: sig, Keyid: env.Signatures[0].KeyID}}}},
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		w.T.Fatal(err)
	}
	return data
}

// tlogEntry is e as a bundle's entry: the kind and version, and the
// inclusion promise (the log's signed entry timestamp) the test CA's
// entry keeps private, signed again by vs's log key.
func (w *World) tlogEntry(vs *ca.VirtualSigstore, e *tlog.Entry) *protorekor.TransparencyLogEntry {
	w.T.Helper()
	tle := e.TransparencyLogEntry()
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	set, err := vs.RekorSignPayload(tlog.RekorPayload{
		Body:           base64.StdEncoding.EncodeToString(tle.GetCanonicalizedBody()),
		IntegratedTime: tle.GetIntegratedTime(),
		LogIndex:       tle.GetLogIndex(),
		LogID:          hex.EncodeToString(tle.GetLogId().GetKeyId()),
	})
	if err != nil {
		w.T.Fatal(err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}

// Attach stores bundles next to img: each as an OCI 1.1 referrer (an
// artifact whose one layer is the bundle), or all as layers of cosign's
// tag sha256-<hex>.att.
func (w *World) Attach(img name.Digest, bundles ...[]byte) {
	w.T.Helper()
	if !w.Referrers {
		w.AttachTag(img, ".att", bundles...)
		return
	}
	w.AttachReferrers(img, bundles...)
}

// AttachReferrers stores each bundle as an OCI 1.1 referrer of img (on a
// registry without the referrers API, go-containerregistry keeps the
// referrers tag sha256-<hex> instead).
func (w *World) AttachReferrers(img name.Digest, bundles ...[]byte) {
	w.T.Helper()
	desc, err := remote.Head(img)
	if err != nil {
		w.T.Fatal(err)
	}
	for _, b := range bundles {
		art := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.MediaType(BundleMediaType))
		art, err = mutate.AppendLayers(art, static.NewLayer(b, types.MediaType(BundleMediaType)))
		if err != nil {
			w.T.Fatal(err)
		}
		// Annotations first: mutate.Annotations drops a subject.
		art = mutate.Annotations(art, map[string]string{AnnotationPredicateType: predicateTypeOf(b)}).(v1.Image)
		art = mutate.Subject(art, *desc).(v1.Image)
		d, err := art.Digest()
		if err != nil {
			w.T.Fatal(err)
		}
		if err := remote.Write(img.Context().Digest(d.String()), art); err != nil {
			w.T.Fatal(err)
		}
	}
}

// AttachTag writes bundles as the layers of img's cosign tag with suffix
// (replacing what it held, as cosign does when it appends).
func (w *World) AttachTag(img name.Digest, suffix string, bundles ...[]byte) {
	w.T.Helper()
	art := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	for _, b := range bundles {
		var err error
		if art, err = mutate.AppendLayers(art, static.NewLayer(b, types.MediaType(BundleMediaType))); err != nil {
			w.T.Fatal(err)
		}
	}
	tag := img.Context().Tag(strings.Replace(img.DigestStr(), ":", "-", 1) + suffix)
	if err := remote.Write(tag, art); err != nil {
		w.T.Fatal(err)
	}
}

// DigestOf is a bundle's evidence digest.
func DigestOf(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// KeyPolicy requires a signature with the CI key, provenance, an SBOM and
// a scan no older than maxAge with nothing above medium.
func KeyPolicy(maxAge time.Duration) *v1alpha1.TrustPolicy {
	return &v1alpha1.TrustPolicy{
		Signatures: []v1alpha1.SignerPolicy{{PublicKey: "keys/ci.pub"}},
		Attestations: &v1alpha1.AttestationPolicy{
			Provenance:        &v1alpha1.ProvenancePolicy{Builders: []string{BuilderID}, SourceRepositories: []string{SourceRepo}},
			SBOM:              &v1alpha1.SBOMPolicy{Formats: []string{"cyclonedx", "spdx"}},
			VulnerabilityScan: &v1alpha1.ScanPolicy{MaxSeverity: "medium", MaxAge: metav1.Duration{Duration: maxAge}},
		},
	}
}

// KeylessPolicy is KeyPolicy with the CI's keyless identity as the signer.
func KeylessPolicy(maxAge time.Duration) *v1alpha1.TrustPolicy {
	tp := KeyPolicy(maxAge)
	tp.Signatures = []v1alpha1.SignerPolicy{{Keyless: &v1alpha1.KeylessSigner{Identity: CIIdentity, Issuer: CIIssuer,
		TrustedRoot: "sigstore/trusted_root.json"}}}
	return tp
}

// predicateTypeOf is the predicate type of a bundle's statement (for the
// referrer's annotation).
func predicateTypeOf(b []byte) string {
	var pb protobundle.Bundle
	if protojson.Unmarshal(b, &pb) != nil {
		return ""
	}
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if json.Unmarshal(pb.GetDsseEnvelope().GetPayload(), &st) != nil {
		return ""
	}
	return st.PredicateType
}

// Evidence is a CI run's bundles for one image; a test replaces or drops
// one (nil) before Attach.
type Evidence struct {
	Sig, Prov, SBOM, Scan []byte
}

// All are e's bundles that are set.
func (e *Evidence) All() [][]byte {
	var out [][]byte
	for _, b := range [][]byte{e.Sig, e.Prov, e.SBOM, e.Scan} {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// CIEvidence is what CI attaches to img, signed with Key: a signature,
// the provenance (BuilderID, SourceRepo at SourceCommit), a CycloneDX SBOM
// and a scan two hours old with one medium finding.
func (w *World) CIEvidence(img name.Digest) *Evidence {
	return &Evidence{
		Sig:  w.SignKey(w.Key, Signature(img)),
		Prov: w.SignKey(w.Key, Provenance(img, BuilderID, SourceRepo, SourceCommit)),
		SBOM: w.SignKey(w.Key, SBOM(img, PredicateCycloneDX+"/v1.5")),
		Scan: w.SignKey(w.Key, Scan(img, w.Now.Add(-2*time.Hour), map[string]string{"CVE-2026-0001": "medium"})),
	}
}

// KeylessEvidence is CIEvidence signed keyless by identity and issuer
// with Sigstore's CA (a clean scan an hour old).
func (w *World) KeylessEvidence(img name.Digest, identity, issuer string) *Evidence {
	return &Evidence{
		Sig:  w.SignKeyless(w.Sigstore, identity, issuer, Signature(img)),
		Prov: w.SignKeyless(w.Sigstore, identity, issuer, Provenance(img, BuilderID, SourceRepo, SourceCommit)),
		SBOM: w.SignKeyless(w.Sigstore, identity, issuer, SBOM(img, PredicateCycloneDX)),
		Scan: w.SignKeyless(w.Sigstore, identity, issuer, Scan(img, w.Now.Add(-time.Hour), nil)),
	}
}
