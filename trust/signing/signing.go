// Package signing makes the Sigstore bundles package trust verifies: an
// in-toto statement about an image digest, signed with a private key file
// (PEM: PKCS#8, SEC 1 or PKCS#1, or cosign's encrypted key) into a DSSE
// envelope in a Sigstore bundle v0.3, by sigstore-go. `make release` signs
// throughline's image index with it. It holds no cryptography of its own:
// the key is parsed by sigstore's cryptoutils, its algorithm chosen by
// sigstore's signature package, the bundle made by sigstore-go's sign.
package signing

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	intoto "github.com/in-toto/attestation/go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// payloadType is the DSSE payload type of an in-toto statement.
const payloadType = "application/vnd.in-toto+json"

// Key is a private signing key (a sigstore-go sign.Keypair).
type Key struct {
	priv crypto.Signer
	alg  signature.AlgorithmDetails
	hint []byte
}

var _ sign.Keypair = (*Key)(nil)

// LoadKey parses the PEM private key pemData (password decrypts an
// encrypted one: cosign's, or PKCS#8; nil for a plain key).
func LoadKey(pemData, password []byte) (*Key, error) {
	pk, err := cryptoutils.UnmarshalPEMToPrivateKey(pemData, func(bool) ([]byte, error) {
		if password == nil {
			return nil, errors.New("the key is encrypted and no password was given")
		}
		return password, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the private key: %w", err)
	}
	priv, ok := pk.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T private key cannot sign", pk)
	}
	alg, err := signature.GetDefaultAlgorithmDetails(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("the private key's algorithm: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return &Key{priv: priv, alg: alg, hint: []byte(base64.StdEncoding.EncodeToString(sum[:]))}, nil
}

// GetHashAlgorithm is the hash the key signs (sign.Keypair).
func (k *Key) GetHashAlgorithm() protocommon.HashAlgorithm { return k.alg.GetProtoHashType() }

// GetSigningAlgorithm is the key's algorithm (sign.Keypair).
func (k *Key) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.alg.GetSignatureAlgorithm()
}

// GetHint is the public key's fingerprint (sign.Keypair).
func (k *Key) GetHint() []byte { return k.hint }

// GetKeyAlgorithm is the key type's name (sign.Keypair).
func (k *Key) GetKeyAlgorithm() string {
	switch k.alg.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

// GetPublicKey is the public key (sign.Keypair).
func (k *Key) GetPublicKey() crypto.PublicKey { return k.priv.Public() }

// GetPublicKeyPem is the public key as PEM (sign.Keypair): what a trust
// policy's publicKey file holds.
func (k *Key) GetPublicKeyPem() (string, error) {
	pem, err := cryptoutils.MarshalPublicKeyToPEM(k.priv.Public())
	if err != nil {
		return "", fmt.Errorf("encoding the public key: %w", err)
	}
	return string(pem), nil
}

// SignData signs data (hashed with the key's hash first, except for pure
// Ed25519) and returns the signature and what was signed (sign.Keypair).
func (k *Key) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.alg.GetHashType()
	signed := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		signed = h.Sum(nil)
	}
	sig, err := k.priv.Sign(rand.Reader, signed, hf)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	return sig, signed, nil
}

// Statement is the in-toto v1 statement of predicateType about the image
// digest (sha256:<hex>) named name, with predicate (JSON; nil: {}).
func Statement(name, digest, predicateType string, predicate []byte) ([]byte, error) {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hex) != 64 {
		return nil, fmt.Errorf("subject digest %q: want sha256:<64 hex>", digest)
	}
	pred := &structpb.Struct{}
	if len(predicate) > 0 {
		var m map[string]any
		if err := json.Unmarshal(predicate, &m); err != nil {
			return nil, fmt.Errorf("the %s predicate is not a JSON object: %w", predicateType, err)
		}
		var err error
		if pred, err = structpb.NewStruct(m); err != nil {
			return nil, fmt.Errorf("the %s predicate: %w", predicateType, err)
		}
	}
	st := &intoto.Statement{
		Type:          intoto.StatementTypeUri,
		Subject:       []*intoto.ResourceDescriptor{{Name: name, Digest: map[string]string{"sha256": hex}}},
		PredicateType: predicateType,
		Predicate:     pred,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the %s statement: %w", predicateType, err)
	}
	data, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s statement: %w", predicateType, err)
	}
	return data, nil
}

// Sign signs the in-toto statement stmt with key into a Sigstore bundle
// (JSON): a DSSE envelope and the key's hint, no transparency log entry
// (a key signature is verified against the policy's public key).
func Sign(ctx context.Context, key *Key, stmt []byte) ([]byte, error) {
	pb, err := sign.Bundle(&sign.DSSEData{Data: stmt, PayloadType: payloadType}, key, sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("signing the statement: %w", err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("encoding the bundle: %w", err)
	}
	return data, nil
}
