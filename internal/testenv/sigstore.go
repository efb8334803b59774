package testenv

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	prototrustroot "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EnvSigstoreDir is the directory of hack/sigstore.sh's binaries: fulcio,
// rekor-server (rekor-tiles, POSIX backend) and timestamp-server.
const EnvSigstoreDir = "THROUGHLINE_SIGSTORE_DIR"

// Versions of hack/sigstore.sh (its cache dir's name).
const sigstoreVersion = "fulcio1.8.5-rekortiles2.3.0-tsa2.1.3"

// SigstoreOptions configures [StartSigstore].
type SigstoreOptions struct {
	// Issuers are the OIDC issuers whose tokens Fulcio certifies.
	Issuers []SigstoreIssuer
	// Audience is the tokens' audience Fulcio accepts (default "sigstore").
	Audience string
}

// SigstoreIssuer is an OIDC issuer Fulcio trusts.
type SigstoreIssuer struct {
	// URL is the issuer exactly as its tokens' iss claim says; Type its
	// Fulcio issuer type ("kubernetes": the certificate's subject is the
	// service account's
	// https://kubernetes.io/namespaces/<ns>/serviceaccounts/<name>), and
	// CA the PEM CA of its HTTPS discovery endpoint (nil: the system's).
	// Fulcio reads the issuer's discovery when it starts: it must be
	// reachable without credentials by then.
	URL, Type string
	CA        []byte
}

// Sigstore is a private Sigstore of real servers on 127.0.0.1: Fulcio
// (its ephemeral CA, no CT log), Rekor v2 (rekor-tiles on a temporary
// directory, a generated signing key) and a timestamp authority (its
// in-memory signer), as a SigningConfig (how to sign) and a TrustedRoot
// (what to trust) built from the servers' own endpoints.
type Sigstore struct {
	// FulcioURL, RekorURL are base URLs; TSAURL is the timestamp
	// endpoint (…/api/v1/timestamp).
	FulcioURL, RekorURL, TSAURL string
	// SigningConfig and TrustedRoot are the JSON files, written at
	// SigningConfigFile and TrustedRootFile.
	SigningConfig, TrustedRoot         []byte
	SigningConfigFile, TrustedRootFile string
}

// StartSigstore starts Fulcio, Rekor v2 and the timestamp authority of
// hack/sigstore.sh ($THROUGHLINE_SIGSTORE_DIR, else its cache dir) and
// stops them when the test ends; it skips the test (fails it in CI) when
// they are not built.
func StartSigstore(t testing.TB, opts SigstoreOptions) *Sigstore {
	t.Helper()
	dir := assetDir(EnvSigstoreDir, "sigstore", sigstoreVersion)
	for _, b := range []string{"fulcio", "rekor-server", "timestamp-server"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing(t, fmt.Sprintf("%s not found in %s (%s)", b, dir, EnvSigstoreDir), "hack/sigstore.sh")
		}
	}
	if opts.Audience == "" {
		opts.Audience = "sigstore"
	}
	ctx, cancel := startContext(t)
	defer cancel()
	work := t.TempDir()
	s := &Sigstore{}
	t0 := time.Now()

	// Fulcio: the ephemeral CA, no CT log, the OIDC issuers.
	type issuer struct {
		IssuerURL string `json:"IssuerURL"`
		ClientID  string `json:"ClientID"`
		Type      string `json:"Type"`
		CACert    string `json:"CACert,omitempty"`
	}
	issuers := map[string]issuer{}
	for _, iss := range opts.Issuers {
		issuers[iss.URL] = issuer{IssuerURL: iss.URL, ClientID: opts.Audience, Type: iss.Type, CACert: string(iss.CA)}
	}
	fcfg, err := json.Marshal(map[string]any{"OIDCIssuers": issuers})
	if err != nil {
		t.Fatal(err)
	}
	fcfgFile := filepath.Join(work, "fulcio-config.json")
	writeFile(t, fcfgFile, fcfg)
	socket := fmt.Sprintf("@throughline-fulcio-%d-%d", os.Getpid(), time.Now().UnixNano())
	ports, err := startServer(ctx, t, "fulcio", filepath.Join(dir, "fulcio"), environ(nil), 3,
		func(p []int) []string {
			return []string{"serve", "--host", "127.0.0.1", "--port", strconv.Itoa(p[0]), "--grpc-host", "127.0.0.1",
				"--grpc-port", strconv.Itoa(p[1]), "--metrics-port", strconv.Itoa(p[2]), "--ca", "ephemeralca", "--ct-log-url", "",
				"--config-path", fcfgFile, "--legacy-unix-domain-socket", socket}
		},
		func(ctx context.Context, p []int) error {
			return expectStatus(fmt.Sprintf("http://127.0.0.1:%d/api/v2/trustBundle", p[0]), http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start fulcio: %v", err)
	}
	s.FulcioURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])

	// Rekor v2: a generated key; the checkpoint origin is the host the
	// trusted root names (verifiers check it against the log's URL).
	rekorKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(rekorKey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(work, "rekor-key.pem")
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	storage := filepath.Join(work, "rekor-tiles")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		t.Fatal(err)
	}
	ports, err = startServer(ctx, t, "rekor-server", filepath.Join(dir, "rekor-server"), environ(nil), 3,
		func(p []int) []string {
			return []string{"serve", "--hostname", "127.0.0.1", "--http-address", "127.0.0.1", "--http-port", strconv.Itoa(p[0]),
				"--grpc-address", "127.0.0.1", "--grpc-port", strconv.Itoa(p[1]), "--http-metrics-port", strconv.Itoa(p[2]),
				"--storage-dir", storage, "--signer-filepath", keyFile, "--checkpoint-interval", "1s", "--batch-max-age", "100ms"}
		},
		func(ctx context.Context, p []int) error {
			// Any HTTP answer: the gateway is up (GET of the write endpoint is not an API).
			_, err := httpStatus(ctx, fmt.Sprintf("http://127.0.0.1:%d/api/v2/log/entries", p[0]))
			return err
		})
	if err != nil {
		t.Fatalf("start rekor-server: %v", err)
	}
	s.RekorURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])

	// The timestamp authority: its in-memory signer.
	ports, err = startServer(ctx, t, "timestamp-server", filepath.Join(dir, "timestamp-server"), environ(nil), 1,
		func(p []int) []string {
			return []string{"serve", "--host", "127.0.0.1", "--port", strconv.Itoa(p[0]), "--timestamp-signer", "memory",
				"--disable-ntp-monitoring"}
		},
		func(ctx context.Context, p []int) error {
			return expectStatus(fmt.Sprintf("http://127.0.0.1:%d/api/v1/timestamp/certchain", p[0]), http.StatusOK)(ctx)
		})
	if err != nil {
		t.Fatalf("start timestamp-server: %v", err)
	}
	tsaBase := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	s.TSAURL = tsaBase + "/api/v1/timestamp"

	s.TrustedRoot = s.trustedRoot(ctx, t, tsaBase, &rekorKey.PublicKey)
	s.SigningConfig = s.signingConfig(t)
	s.TrustedRootFile, s.SigningConfigFile = filepath.Join(work, "trusted_root.json"), filepath.Join(work, "signing_config.json")
	writeFile(t, s.TrustedRootFile, s.TrustedRoot)
	writeFile(t, s.SigningConfigFile, s.SigningConfig)
	t.Logf("fulcio %s, rekor v2 %s, timestamp authority %s ready in %s", s.FulcioURL, s.RekorURL, s.TSAURL,
		time.Since(t0).Round(time.Millisecond))
	return s
}

// validFrom starts the services' and keys' validity an hour back (the
// ephemeral CA and the TSA's certificates were made a moment ago).
func validFrom() time.Time { return time.Now().Add(-time.Hour) }

// trustedRoot is the TrustedRoot of s: Fulcio's trust bundle, the Rekor
// key (its log ID as rekor-tiles computes it for an ECDSA key: the SHA-256
// of the DER public key) and the TSA's certificate chain.
func (s *Sigstore) trustedRoot(ctx context.Context, t testing.TB, tsaBase string, rekorPub *ecdsa.PublicKey) []byte {
	t.Helper()
	var bundle struct {
		Chains []struct {
			Certificates []string `json:"certificates"`
		} `json:"chains"`
	}
	if err := json.Unmarshal(get(ctx, t, s.FulcioURL+"/api/v2/trustBundle"), &bundle); err != nil {
		t.Fatalf("fulcio's trust bundle: %v", err)
	}
	var cas []root.CertificateAuthority
	for _, ch := range bundle.Chains {
		var certs []*x509.Certificate
		for _, p := range ch.Certificates {
			cs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(p))
			if err != nil {
				t.Fatalf("fulcio's trust bundle: %v", err)
			}
			certs = append(certs, cs...)
		}
		if len(certs) == 0 {
			continue
		}
		cas = append(cas, &root.FulcioCertificateAuthority{Root: certs[len(certs)-1], Intermediates: certs[:len(certs)-1],
			URI: s.FulcioURL, ValidityPeriodStart: validFrom()})
	}
	if len(cas) == 0 {
		t.Fatal("fulcio's trust bundle holds no certificate")
	}
	chain, err := cryptoutils.UnmarshalCertificatesFromPEM(get(ctx, t, tsaBase+"/api/v1/timestamp/certchain"))
	if err != nil || len(chain) == 0 {
		t.Fatalf("the timestamp authority's certificate chain: %v (%d certificates)", err, len(chain))
	}
	tsa := &root.SigstoreTimestampingAuthority{Leaf: chain[0], Root: chain[len(chain)-1], URI: tsaBase, ValidityPeriodStart: validFrom()}
	if len(chain) > 2 {
		tsa.Intermediates = chain[1 : len(chain)-1]
	}
	der, err := x509.MarshalPKIXPublicKey(rekorPub)
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(der)
	logs := map[string]*root.TransparencyLog{fmt.Sprintf("%x", id): {BaseURL: s.RekorURL, ID: id[:], HashFunc: crypto.SHA256,
		PublicKey: rekorPub, SignatureHashFunc: crypto.SHA256, ValidityPeriodStart: validFrom()}}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, nil, []root.TimestampingAuthority{tsa}, logs)
	if err != nil {
		t.Fatalf("the trusted root: %v", err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatalf("the trusted root: %v", err)
	}
	return data
}

// signingConfig is the SigningConfig v0.2 of s: its Fulcio, its Rekor
// (API v2) and its timestamp authority.
func (s *Sigstore) signingConfig(t testing.TB) []byte {
	t.Helper()
	svc := func(url string, v uint32) []root.Service {
		return []root.Service{{URL: url, MajorAPIVersion: v, ValidityPeriodStart: validFrom()}}
	}
	one := root.ServiceConfiguration{Selector: prototrustroot.ServiceSelector_ANY}
	sc, err := root.NewSigningConfig(root.SigningConfigMediaType02, svc(s.FulcioURL, 1), nil, svc(s.RekorURL, 2), one,
		svc(s.TSAURL, 1), one)
	if err != nil {
		t.Fatalf("the signing config: %v", err)
	}
	data, err := sc.MarshalJSON()
	if err != nil {
		t.Fatalf("the signing config: %v", err)
	}
	return data
}

// get is the body of GET url (status 200).
func get(ctx context.Context, t testing.TB, url string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, body)
	}
	return body
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// OIDCIssuer opens a's service-account token issuer to relying parties
// outside the cluster (Fulcio's "kubernetes" issuer type): it binds the
// ClusterRole system:service-account-issuer-discovery to unauthenticated
// users, waits until the discovery document answers without credentials,
// and returns the issuer (as its tokens' iss claim says it) and the API
// server's CA (PEM).
func (a *APIServer) OIDCIssuer(ctx context.Context) (string, []byte) {
	t := a.t
	t.Helper()
	cs, err := kubernetes.NewForConfig(a.Config)
	if err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "throughline-oidc-discovery"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:service-account-issuer-discovery"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:unauthenticated"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("binding the issuer discovery to unauthenticated users: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(a.Config.CAData) {
		t.Fatal("the API server's CA is not PEM")
	}
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	url := strings.TrimSuffix(a.Config.Host, "/") + "/.well-known/openid-configuration"
	var doc struct {
		Issuer string `json:"issuer"`
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := anon.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &doc) == nil && doc.Issuer != "" {
				return doc.Issuer, a.Config.CAData
			}
			err = fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("anonymous GET %s: %v", url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ServiceAccountToken is a token of the service account namespace/name
// (created with its namespace when missing) for audience, valid for an
// hour: what a pod's projected token volume holds.
func (a *APIServer) ServiceAccountToken(ctx context.Context, namespace, name, audience string) string {
	t := a.t
	t.Helper()
	cs, err := kubernetes.NewForConfig(a.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", namespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("service account %s/%s: %v", namespace, name, err)
	}
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of %s/%s for %s: %v", namespace, name, audience, err)
	}
	return tr.Status.Token
}
