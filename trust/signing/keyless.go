package signing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/throughline-dev/throughline/boundedfile"
)

// Signer signs in-toto statements into Sigstore bundles: a Key, or a
// Keyless identity.
type Signer interface {
	// SignStatement signs the in-toto statement stmt into a Sigstore
	// bundle (JSON) with a DSSE envelope.
	SignStatement(ctx context.Context, stmt []byte) ([]byte, error)
	// Describe names the signer for a log line: a key's hint, a keyless
	// signer's certificate authority.
	Describe() string
}

var (
	_ Signer = (*Key)(nil)
	_ Signer = (*Keyless)(nil)
)

// SignStatement signs stmt with the key (Sign).
func (k *Key) SignStatement(ctx context.Context, stmt []byte) ([]byte, error) {
	return Sign(ctx, k, stmt)
}

// Describe is "key <hint>".
func (k *Key) Describe() string { return "key " + string(k.hint) }

// maxToken caps an OIDC identity token file.
const maxToken = 64 << 10

// Keyless signs with a short-lived certificate: for each statement, a new
// ephemeral key, certified by the Fulcio of a Sigstore SigningConfig for
// the OIDC identity token read from a file at that moment (a Kubernetes
// projected service-account token is rotated in place), the signature
// logged in the config's Rekor (v1 or v2) and timestamped by its timestamp
// authorities, all by sigstore-go's sign package. The services are picked
// by the config's selectors at each signature (their validity periods).
type Keyless struct {
	config    *root.SigningConfig
	tokenFile string
	opts      KeylessOptions
}

// KeylessOptions tune a Keyless signer.
type KeylessOptions struct {
	// Transport is the HTTP transport to Fulcio and the timestamp
	// authorities (nil: http.DefaultTransport).
	Transport http.RoundTripper
	// Timeout bounds each request (0: sigstore-go's 30s).
	Timeout time.Duration
}

// LoadSigningConfig parses a Sigstore SigningConfig (JSON, media type
// application/vnd.dev.sigstore.signingconfig.v0.2+json).
func LoadSigningConfig(data []byte) (*root.SigningConfig, error) {
	sc, err := root.NewSigningConfigFromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("reading the signing config: %w", err)
	}
	return sc, nil
}

// NewKeyless is a keyless signer of the services of config, with the OIDC
// token of tokenFile. The config must name a Fulcio, and a transparency
// log or a timestamp authority (else nothing would date the certificate):
// it is refused here, not at the first signature.
func NewKeyless(config *root.SigningConfig, tokenFile string, opts KeylessOptions) (*Keyless, error) {
	if tokenFile == "" {
		return nil, errors.New("keyless signing: no identity token file")
	}
	k := &Keyless{config: config, tokenFile: tokenFile, opts: opts}
	if _, _, _, err := k.services(); err != nil {
		return nil, err
	}
	return k, nil
}

// services picks the Fulcio, Rekors and timestamp authorities of the
// config valid now.
func (k *Keyless) services() (root.Service, []root.Service, []root.Service, error) {
	now := time.Now()
	ca, err := root.SelectService(k.config.FulcioCertificateAuthorityURLs(), sign.FulcioAPIVersions, now)
	if err != nil {
		return root.Service{}, nil, nil, fmt.Errorf("keyless signing: the signing config's certificate authority: %w", err)
	}
	var logs, tsas []root.Service
	if len(k.config.RekorLogURLs()) > 0 {
		if logs, err = root.SelectServices(k.config.RekorLogURLs(), k.config.RekorLogURLsConfig(), sign.RekorAPIVersions, now); err != nil {
			return root.Service{}, nil, nil, fmt.Errorf("keyless signing: the signing config's transparency logs: %w", err)
		}
	}
	if len(k.config.TimestampAuthorityURLs()) > 0 {
		tsas, err = root.SelectServices(k.config.TimestampAuthorityURLs(), k.config.TimestampAuthorityURLsConfig(),
			sign.TimestampAuthorityAPIVersions, now)
		if err != nil {
			return root.Service{}, nil, nil, fmt.Errorf("keyless signing: the signing config's timestamp authorities: %w", err)
		}
	}
	if len(logs) == 0 && len(tsas) == 0 {
		return root.Service{}, nil, nil, errors.New("keyless signing: the signing config names no transparency log and no timestamp " +
			"authority: nothing would date the short-lived certificate")
	}
	return ca, logs, tsas, nil
}

// Describe is "keyless (Fulcio <url>)".
func (k *Keyless) Describe() string {
	ca, _, _, err := k.services()
	if err != nil {
		return "keyless"
	}
	return "keyless (Fulcio " + ca.URL + ")"
}

// token reads the identity token file (bounded; the error names the
// file, never its content).
func (k *Keyless) token() (string, error) {
	data, err := boundedfile.Read(k.tokenFile, maxToken)
	if err != nil {
		return "", fmt.Errorf("keyless signing: the identity token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("keyless signing: identity token %s is empty", k.tokenFile)
	}
	return tok, nil
}

// SignStatement signs stmt with a new ephemeral key certified by Fulcio
// into a Sigstore bundle v0.3 (JSON): the certificate, the DSSE envelope,
// the transparency log entries and the signed timestamps.
func (k *Keyless) SignStatement(ctx context.Context, stmt []byte) ([]byte, error) {
	tok, err := k.token()
	if err != nil {
		return nil, err
	}
	ca, logs, tsas, err := k.services()
	if err != nil {
		return nil, err
	}
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, fmt.Errorf("keyless signing: an ephemeral key: %w", err)
	}
	opts := sign.BundleOptions{
		Context:                    ctx,
		CertificateProvider:        sign.NewFulcio(&sign.FulcioOptions{BaseURL: ca.URL, Timeout: k.opts.Timeout, Transport: k.opts.Transport}),
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: tok},
	}
	for _, l := range logs {
		opts.TransparencyLogs = append(opts.TransparencyLogs,
			sign.NewRekor(&sign.RekorOptions{BaseURL: l.URL, Timeout: k.opts.Timeout, Version: l.MajorAPIVersion}))
	}
	for _, t := range tsas {
		opts.TimestampAuthorities = append(opts.TimestampAuthorities,
			sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{URL: t.URL, Timeout: k.opts.Timeout, Transport: k.opts.Transport}))
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: stmt, PayloadType: payloadType}, kp, opts)
	if err != nil {
		return nil, fmt.Errorf("keyless signing the statement (Fulcio %s): %w", ca.URL, err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("encoding the bundle: %w", err)
	}
	return data, nil
}
