package signing

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	prototrustroot "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// signingConfig is a SigningConfig of a Fulcio, and of Rekor v2 and a
// timestamp authority when named.
func signingConfig(t *testing.T, fulcio, rekor, tsa string) *root.SigningConfig {
	t.Helper()
	svc := func(url string, v uint32) []root.Service {
		if url == "" {
			return nil
		}
		return []root.Service{{URL: url, MajorAPIVersion: v, ValidityPeriodStart: time.Now().Add(-time.Hour)}}
	}
	all := root.ServiceConfiguration{Selector: prototrustroot.ServiceSelector_ALL}
	sc, err := root.NewSigningConfig(root.SigningConfigMediaType02, svc(fulcio, 1), nil, svc(rekor, 2), all, svc(tsa, 1), all)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestKeylessRefusesConfig: a signing config with no certificate
// authority, or with nothing to date the short-lived certificate (no
// transparency log, no timestamp authority), or no token file is refused
// when the signer is made, not at the first acceptance.
func TestKeylessRefusesConfig(t *testing.T) {
	t.Parallel()
	tok := filepath.Join(t.TempDir(), "token")
	for _, tc := range []struct {
		name              string
		fulcio, rekor, ts string
		token             string
		want              string
	}{
		{"no Fulcio", "", "http://rekor.example", "http://tsa.example/api/v1/timestamp", tok, "certificate authority"},
		{"nothing dates the certificate", "http://fulcio.example", "", "", tok, "nothing would date"},
		{"no token file", "http://fulcio.example", "http://rekor.example", "", "", "no identity token file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewKeyless(signingConfig(t, tc.fulcio, tc.rekor, tc.ts), tc.token, KeylessOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewKeyless = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestKeylessToken: the token is read at each signature; a missing,
// empty or oversized one is an error naming the file, never its content,
// before any service is asked.
func TestKeylessToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	// Unroutable services: reaching one would fail otherwise.
	k, err := NewKeyless(signingConfig(t, "http://127.0.0.1:1", "http://127.0.0.1:1", "http://127.0.0.1:1/api/v1/timestamp"), tok,
		KeylessOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Describe(); got != "keyless (Fulcio http://127.0.0.1:1)" {
		t.Fatalf("Describe() = %q", got)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		content []byte // nil: no file
		want    string
	}{
		{"missing", nil, "no such file"},
		{"empty", []byte("\n"), "is empty"},
		{"oversized", []byte("secret-token-" + strings.Repeat("x", maxToken)), "over"},
	} {
		_ = os.Remove(tok)
		if tc.content != nil {
			if err := os.WriteFile(tok, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := k.SignStatement(ctx, []byte(`{}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tok) ||
			strings.Contains(err.Error(), "secret-token") {
			t.Fatalf("%s: SignStatement = %v, want an error naming %s saying %q", tc.name, err, tok, tc.want)
		}
	}
	// A token: the certificate authority is asked (and is not there).
	if err := os.WriteFile(tok, []byte("eyJ.a.b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := k.SignStatement(ctx, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "Fulcio http://127.0.0.1:1") {
		t.Fatalf("SignStatement with a token = %v, want Fulcio's failure", err)
	}
}
