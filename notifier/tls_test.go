package notifier

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 with the serial
// number to certFile and keyFile and returns it.
func selfSigned(t *testing.T, serial int64, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "throughline-notifier"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	must(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	return cert
}

// TestStartTLS serves the receivers over HTTPS and picks up a certificate
// replaced on disk (as cert-manager renews a mounted Secret) without a
// restart.
func TestStartTLS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	gittest.Run(t, base, "init", "-q", "--bare", "-b", "main", "origin.git")
	gittest.Run(t, base, "clone", "-q", "origin.git", "work")
	repo, err := gitops.OpenLocal(ctx, filepath.Join(base, "work"))
	must(t, err)
	certFile, keyFile := filepath.Join(base, "tls.crt"), filepath.Join(base, "tls.key")
	first := selfSigned(t, 1, certFile, keyFile)

	if _, err := Start(ctx, ServiceConfig{Handler: Config{FluxKey: fluxKey}, Addr: "127.0.0.1:0", Repo: repo, Kube: &rest.Config{},
		TLSCertFile: certFile}); err == nil {
		t.Fatal("a certificate without a key was accepted")
	}
	svc, err := Start(ctx, ServiceConfig{
		Handler: Config{FluxKey: fluxKey, Rate: -1}, Addr: "127.0.0.1:0", Repo: repo, Kube: &rest.Config{Host: "http://127.0.0.1:1"},
		TLSCertFile: certFile, TLSKeyFile: keyFile,
	})
	must(t, err)
	defer func() { _ = svc.Stop(ctx) }()
	url := "https://" + svc.Addr().String() + "/healthz"

	served := func(trust *x509.Certificate) (*x509.Certificate, error) {
		pool := x509.NewCertPool()
		pool.AddCert(trust)
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true,
		}}
		resp, err := client.Get(url)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("healthz over TLS: %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0], nil
	}
	got, err := served(first)
	must(t, err)
	if got.SerialNumber.Int64() != 1 {
		t.Fatalf("serving serial %v, want 1", got.SerialNumber)
	}
	if resp, err := http.Get("http://" + svc.Addr().String() + "/healthz"); err == nil && resp.StatusCode == http.StatusOK {
		resp.Body.Close()
		t.Error("plain HTTP is served on the TLS listener")
	}

	second := selfSigned(t, 2, certFile, keyFile)
	later := time.Now().Add(2 * time.Second) // a coarse filesystem clock still sees a change
	must(t, os.Chtimes(certFile, later, later))
	must(t, os.Chtimes(keyFile, later, later))
	got, err = served(second)
	must(t, err)
	if got.SerialNumber.Int64() != 2 {
		t.Fatalf("after the renewal: serving serial %v, want 2", got.SerialNumber)
	}

	// A half-written renewal (a key that does not match) keeps the
	// certificate that works.
	must(t, os.WriteFile(keyFile, []byte("-----BEGIN EC PRIVATE KEY-----\nbroken\n-----END EC PRIVATE KEY-----\n"), 0o600))
	evenLater := later.Add(2 * time.Second)
	must(t, os.Chtimes(keyFile, evenLater, evenLater))
	got, err = served(second)
	must(t, err)
	if got.SerialNumber.Int64() != 2 {
		t.Fatalf("after a broken renewal: serving serial %v, want 2", got.SerialNumber)
	}
}
