package trust

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

// Identities of the test's keyless signers.
const (
	ciIdentity    = "https://github.com/example/checkout/.github/workflows/release.yaml@refs/heads/main"
	ciIssuer      = "https://token.actions.githubusercontent.com"
	builderID     = "https://github.com/actions/runner/github-hosted"
	sourceRepo    = "https://github.com/example/checkout"
	sourceCommit  = "0123456789abcdef0123456789abcdef01234567"
	intotoPayload = "application/vnd.in-toto+json"
)

// world is a registry (go-containerregistry's in-process one, counting
// requests), the CI's key and keyless identity (a VirtualSigstore: test
// CA, transparency log and TSA, offline), an attacker's key and Sigstore,
// and the repository files a policy names.
type world struct {
	t         *testing.T
	host      string
	requests  atomic.Int64
	referrers bool
	key       *sign.EphemeralKeypair
	otherKey  *sign.EphemeralKeypair
	sigstore  *ca.VirtualSigstore
	rogue     *ca.VirtualSigstore
	files     map[string][]byte
	now       time.Time
}

// newWorld starts a registry; referrers: it answers the OCI 1.1 referrers
// API and bundles are attached as referrers, else through cosign's tags.
func newWorld(t *testing.T, referrers bool) *world {
	t.Helper()
	w := &world{t: t, referrers: referrers, files: map[string][]byte{}, now: time.Now()}
	reg := registry.New(registry.WithReferrersSupport(referrers), registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests.Add(1)
		reg.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.host = strings.TrimPrefix(srv.URL, "http://")
	var err error
	if w.key, err = sign.NewEphemeralKeypair(nil); err != nil {
		t.Fatal(err)
	}
	if w.otherKey, err = sign.NewEphemeralKeypair(nil); err != nil {
		t.Fatal(err)
	}
	if w.sigstore, err = ca.NewVirtualSigstore(); err != nil {
		t.Fatal(err)
	}
	if w.rogue, err = ca.NewVirtualSigstore(); err != nil {
		t.Fatal(err)
	}
	pem, err := w.key.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	w.files["keys/ci.pub"] = []byte(pem)
	w.files["sigstore/trusted_root.json"] = trustedRootJSON(t, w.sigstore)
	return w
}

func trustedRootJSON(t *testing.T, vs *ca.VirtualSigstore) []byte {
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
func rawLogIDs(t *testing.T, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
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

// read is the policy's ReadFile over w.files.
func (w *world) read(_ context.Context, p string) ([]byte, error) {
	if d, ok := w.files[p]; ok {
		return d, nil
	}
	return nil, fs.ErrNotExist
}

// image pushes a random image and returns its digest reference.
func (w *world) image(repo string) name.Digest {
	w.t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		w.t.Fatal(err)
	}
	tag, err := name.NewTag(w.host + "/" + repo + ":latest")
	if err != nil {
		w.t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		w.t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		w.t.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

// statement is an in-toto v1 statement about the sha256 digest hex.
func statement(hex, predicateType string, predicate any) []byte {
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

func signatureOf(img name.Digest) []byte {
	return statement(hexOf(img), PredicateSignature, map[string]any{})
}

func provenance(img name.Digest, builder, repo, commit string) []byte {
	return statement(hexOf(img), PredicateSLSAProvenance, map[string]any{
		"buildDefinition": map[string]any{
			"buildType":          "https://actions.github.io/buildtypes/workflow/v1",
			"externalParameters": map[string]any{"workflow": map[string]any{"repository": repo}},
			"resolvedDependencies": []any{map[string]any{"uri": "git+" + repo + "@refs/heads/main",
				"digest": map[string]string{"gitCommit": commit}}},
		},
		"runDetails": map[string]any{"builder": map[string]any{"id": builder}},
	})
}

func sbom(img name.Digest, predicateType string) []byte {
	return statement(hexOf(img), predicateType, map[string]any{"bomFormat": "CycloneDX", "specVersion": "1.5"})
}

// scan is a vulns v0.2 statement finished at finished with findings
// (id -> severity score).
func scan(img name.Digest, finished time.Time, findings map[string]string) []byte {
	result := []any{}
	for id, score := range findings {
		result = append(result, map[string]any{"id": id, "severity": []any{map[string]string{"method": "nvd", "score": score}}})
	}
	return statement(hexOf(img), PredicateVulns, map[string]any{
		"scanner": map[string]any{"uri": "pkg:github/aquasecurity/trivy@v0.50.0", "result": result,
			"db": map[string]any{"lastUpdate": finished.UTC().Format(time.RFC3339)}},
		"metadata": map[string]any{"scanStartedOn": finished.Add(-time.Minute).UTC().Format(time.RFC3339),
			"scanFinishedOn": finished.UTC().Format(time.RFC3339)},
	})
}

func hexOf(img name.Digest) string { return strings.TrimPrefix(img.DigestStr(), "sha256:") }

// signKey is a bundle of stmt signed with kp (a public-key bundle, as
// cosign attest --key --new-bundle-format makes).
func (w *world) signKey(kp *sign.EphemeralKeypair, stmt []byte) []byte {
	w.t.Helper()
	pb, err := sign.Bundle(&sign.DSSEData{Data: stmt, PayloadType: intotoPayload}, kp, sign.BundleOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		w.t.Fatal(err)
	}
	return data
}

// signKeyless is a keyless bundle of stmt: a certificate for identity and
// issuer from vs's CA, its transparency log entry (inclusion proof and
// promise) and timestamp.
func (w *world) signKeyless(vs *ca.VirtualSigstore, identity, issuer string, stmt []byte) []byte {
	w.t.Helper()
	ent, err := vs.AttestAtTime(identity, issuer, stmt, time.Now().Add(time.Minute), true)
	if err != nil {
		w.t.Fatal(err)
	}
	vc, err := ent.VerificationContent()
	if err != nil {
		w.t.Fatal(err)
	}
	sc, err := ent.SignatureContent()
	if err != nil {
		w.t.Fatal(err)
	}
	env := sc.(*bundle.Envelope).RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		w.t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		w.t.Fatal(err)
	}
	entries, err := ent.TlogEntries()
	if err != nil {
		w.t.Fatal(err)
	}
	tles := make([]*protorekor.TransparencyLogEntry, 0, len(entries))
	for _, e := range entries {
		tles = append(tles, w.tlogEntry(vs, e))
	}
	tss, err := ent.Timestamps()
	if err != nil {
		w.t.Fatal(err)
	}
	var rfc []*protocommon.RFC3161SignedTimestamp
	for _, ts := range tss {
		rfc = append(rfc, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
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
		w.t.Fatal(err)
	}
	return data
}

// tlogEntry is e as a bundle's entry: the kind and version, and the
// inclusion promise (the log's signed entry timestamp) the test CA's
// entry keeps private, signed again by vs's log key.
func (w *world) tlogEntry(vs *ca.VirtualSigstore, e *tlog.Entry) *protorekor.TransparencyLogEntry {
	w.t.Helper()
	tle := e.TransparencyLogEntry()
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	set, err := vs.RekorSignPayload(tlog.RekorPayload{
		Body:           base64.StdEncoding.EncodeToString(tle.GetCanonicalizedBody()),
		IntegratedTime: tle.GetIntegratedTime(),
		LogIndex:       tle.GetLogIndex(),
		LogID:          hex.EncodeToString(tle.GetLogId().GetKeyId()),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}

// attach stores bundles next to img: each as an OCI 1.1 referrer (an
// artifact whose one layer is the bundle), or all as layers of cosign's
// tag sha256-<hex>.att.
func (w *world) attach(img name.Digest, bundles ...[]byte) {
	w.t.Helper()
	if !w.referrers {
		w.attachTag(img, ".att", bundles...)
		return
	}
	desc, err := remote.Head(img)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, b := range bundles {
		art := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.MediaType(BundleMediaType))
		art, err = mutate.AppendLayers(art, static.NewLayer(b, types.MediaType(BundleMediaType)))
		if err != nil {
			w.t.Fatal(err)
		}
		// Annotations first: mutate.Annotations drops a subject.
		art = mutate.Annotations(art, map[string]string{AnnotationPredicateType: claimedType(b)}).(v1.Image)
		art = mutate.Subject(art, *desc).(v1.Image)
		d, err := art.Digest()
		if err != nil {
			w.t.Fatal(err)
		}
		if err := remote.Write(img.Context().Digest(d.String()), art); err != nil {
			w.t.Fatal(err)
		}
	}
}

// attachTag writes bundles as the layers of img's cosign tag with suffix
// (replacing what it held, as cosign does when it appends).
func (w *world) attachTag(img name.Digest, suffix string, bundles ...[]byte) {
	w.t.Helper()
	art := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	for _, b := range bundles {
		var err error
		if art, err = mutate.AppendLayers(art, static.NewLayer(b, types.MediaType(BundleMediaType))); err != nil {
			w.t.Fatal(err)
		}
	}
	tag := img.Context().Tag(strings.Replace(img.DigestStr(), ":", "-", 1) + suffix)
	if err := remote.Write(tag, art); err != nil {
		w.t.Fatal(err)
	}
}

// digestOf is a bundle's evidence digest.
func digestOf(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// policy compiles tp for env against w's files.
func (w *world) policy(env string, tp *v1alpha1.TrustPolicy) *Policy {
	w.t.Helper()
	p, err := Compile(context.Background(), env, tp, w.read)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// keyPolicy requires a signature with the CI key, provenance, an SBOM and
// a scan no older than maxAge with nothing above medium.
func keyPolicy(maxAge time.Duration) *v1alpha1.TrustPolicy {
	return &v1alpha1.TrustPolicy{
		Signatures: []v1alpha1.SignerPolicy{{PublicKey: "keys/ci.pub"}},
		Attestations: &v1alpha1.AttestationPolicy{
			Provenance:        &v1alpha1.ProvenancePolicy{Builders: []string{builderID}, SourceRepositories: []string{sourceRepo}},
			SBOM:              &v1alpha1.SBOMPolicy{Formats: []string{"cyclonedx", "spdx"}},
			VulnerabilityScan: &v1alpha1.ScanPolicy{MaxSeverity: "medium", MaxAge: metav1.Duration{Duration: maxAge}},
		},
	}
}

// keylessPolicy is keyPolicy with the CI's keyless identity as the signer.
func keylessPolicy(maxAge time.Duration) *v1alpha1.TrustPolicy {
	tp := keyPolicy(maxAge)
	tp.Signatures = []v1alpha1.SignerPolicy{{Keyless: &v1alpha1.KeylessSigner{Identity: ciIdentity, Issuer: ciIssuer,
		TrustedRoot: "sigstore/trusted_root.json"}}}
	return tp
}
