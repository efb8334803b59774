package signing

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// keyFiles are one P-256 key as the PEM files a caller may give: PKCS#8
// (openssl genpkey), SEC 1 (openssl ecparam -genkey) and cosign's
// encrypted key (cosign generate-key-pair), with its password.
func keyFiles(t *testing.T) (map[string][]byte, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pass := []byte("correct horse")
	enc, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(k, func(bool) ([]byte, error) { return pass, nil })
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"pkcs8":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		"sec1":   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
		"cosign": pem.EncodeToMemory(&pem.Block{Type: string(cryptoutils.EncryptedSigstorePrivateKeyPEMType), Bytes: enc}),
	}, pass
}

// TestSignedEvidenceVerifies: a signature and an SBOM attestation made
// with each key file, attached as the release attaches them, pass package
// trust's verification against a policy naming the public key; an
// encrypted key without or with a wrong password is refused.
func TestSignedEvidenceVerifies(t *testing.T) {
	files, pass := keyFiles(t)
	ctx := context.Background()
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			var password []byte
			if name == "cosign" {
				if _, err := LoadKey(file, nil); err == nil {
					t.Fatal("an encrypted key loaded without its password")
				}
				if _, err := LoadKey(file, []byte("wrong")); err == nil {
					t.Fatal("an encrypted key loaded with a wrong password")
				}
				password = pass
			}
			key, err := LoadKey(file, password)
			if err != nil {
				t.Fatal(err)
			}
			w := trusttest.New(t, false)
			img := w.Image("throughline")
			sig, err := Statement(img.Context().Name(), img.DigestStr(), trust.PredicateSignature, nil)
			if err != nil {
				t.Fatal(err)
			}
			sbom, err := Statement(img.Context().Name(), img.DigestStr(), trust.PredicateCycloneDX, []byte(`{"bomFormat":"CycloneDX"}`))
			if err != nil {
				t.Fatal(err)
			}
			var bundles [][]byte
			for _, st := range [][]byte{sig, sbom} {
				b, err := Sign(ctx, key, st)
				if err != nil {
					t.Fatal(err)
				}
				bundles = append(bundles, b)
			}
			if err := trust.AttachTag(ctx, img.String(), ".sig", bundles[:1], nil); err != nil {
				t.Fatal(err)
			}
			if _, err := trust.Attach(ctx, img.String(), trust.BundleMediaType, nil, bundles[1:], nil); err != nil {
				t.Fatal(err)
			}
			pub, err := key.GetPublicKeyPem()
			if err != nil {
				t.Fatal(err)
			}
			w.Files["keys/release.pub"] = []byte(pub)
			tp := &v1alpha1.TrustPolicy{Signatures: []v1alpha1.SignerPolicy{{PublicKey: "keys/release.pub"}},
				Attestations: &v1alpha1.AttestationPolicy{SBOM: &v1alpha1.SBOMPolicy{Formats: []string{"cyclonedx"}}}}
			pol, err := trust.Compile(ctx, "release", tp, w.Read)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := trust.Verify(ctx, pol, img.String(), trust.Options{Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if len(ev.Items) != 2 || ev.Items[0].Kind != trust.KindSignature || ev.Items[1].Kind != trust.KindSBOM {
				t.Fatalf("evidence %+v: want the signature and the SBOM", ev)
			}
		})
	}
}

// TestStatementRefusesBadInput: a subject that is not a sha256 digest, a
// predicate that is not a JSON object.
func TestStatementRefusesBadInput(t *testing.T) {
	t.Parallel()
	good := "sha256:" + strings.Repeat("a", 64)
	for _, c := range []struct{ digest, predicate string }{
		{"sha256:abc", ""}, {"sha512:" + strings.Repeat("a", 64), ""}, {good, "[1]"}, {good, "not json"},
	} {
		if _, err := Statement("throughline", c.digest, trust.PredicateCycloneDX, []byte(c.predicate)); err == nil {
			t.Errorf("%s %q: accepted", c.digest, c.predicate)
		}
	}
	if _, err := LoadKey([]byte("not a key"), nil); err == nil {
		t.Error("a non-PEM key loaded")
	}
}
