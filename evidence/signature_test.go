package evidence_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// signedFixture is a valid evidence file of staging, its bytes.
func signedFixture(t *testing.T) []byte {
	t.Helper()
	rev := strings.Repeat("a", 40)
	digest := "sha256:" + strings.Repeat("b", 64)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: "checkout", Environment: "staging", PromotionID: "checkout-staging-1",
		Decision: promotion.Accepted, Image: "ghcr.io/x/checkout@" + digest, ArtifactDigest: digest, DesiredRevision: rev, ObservedRevision: rev,
		Pods: []evidence.Pod{{Workload: "Deployment/shop/checkout", Container: "checkout", Pod: "checkout-1", Pods: 1, Declared: digest,
			ImageID: "ghcr.io/x/checkout@" + digest, Outcome: "Verified", Match: "Exact"}},
		ReportedBy: evidence.Reporter{Source: "argocd", Object: "Application/argocd/checkout-staging"}, Time: at, VerifiedAt: &at}
	data, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOpenRefuses: what a hostile contributor tries with evidence: no
// signature, another key, the key of another environment, a signature of
// something else, an edit after signing, a key past its validity. Each is
// a *SignatureError naming the key found; the notifier's own signature
// opens.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	staging := sshkey.NewNotifier(t, "staging")
	prod := sshkey.NewNotifier(t, "production")
	rogue := sshkey.NewNotifier(t, "staging")
	data := signedFixture(t)
	file := "evidence/staging/checkout/checkout-staging-1.json"
	sign := func(s sshkey.Notifier, b []byte) []byte {
		sig, err := evidence.Sign(b, s)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	otherNamespace, err := sshsig.Sign(bytes.NewReader(data), staging, sshsig.HashSHA512, "git")
	if err != nil {
		t.Fatal(err)
	}
	signers := staging.Line() + prod.Line()
	for _, tc := range []struct {
		name    string
		signers string
		data    []byte
		sig     []byte
		key     string // the fingerprint the error names ("" none)
		reason  string // a part of the reason (the wording is in the golden file)
	}{
		{"signed by the notifier of the environment", signers, data, sign(staging, data), "", ""},
		{"no signature", signers, data, nil, "", "no signature"},
		{"a key the policy does not list", signers, data, sign(rogue, data), sshFingerprint(rogue), "lists no such key"},
		{"the key of another environment", signers, data, sign(prod, data), sshFingerprint(prod), "for production, not for staging"},
		{"a signature of something else", signers, data, sshsig.Armor(otherNamespace), sshFingerprint(staging), `for "git"`},
		{"an edit after signing", signers, bytes.Replace(data, []byte(`"Verified"`), []byte(`"Verified" `), 1), sign(staging, data), sshFingerprint(staging),
			"does not verify"},
		{"a key no longer valid", `staging valid-before="20261101" ` + strings.TrimPrefix(staging.Line(), "staging "), data, sign(staging, data),
			sshFingerprint(staging), "valid-before"},
		{"a key not yet valid", `staging valid-after="20270101Z" ` + strings.TrimPrefix(staging.Line(), "staging "), data, sign(staging, data),
			sshFingerprint(staging), "valid-after"},
		{"not a signature", signers, data, []byte("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"), "", "not an SSH signature"},
		{"a signature file over the limit", signers, data, bytes.Repeat([]byte("A"), 17<<10), "", "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys, err := evidence.ParseKeys(".throughline/evidence-signers", []byte(tc.signers))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := evidence.Open(file, "staging", tc.data, tc.sig, keys)
			if tc.reason == "" {
				if err != nil || rec.PromotionID != "checkout-staging-1" {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			var se *evidence.SignatureError
			if !errors.As(err, &se) || se.File != file || se.Key != tc.key || !strings.Contains(se.Reason, tc.reason) {
				t.Fatalf("Open: %v (%#v), want a signature error by %q: %s", err, se, tc.key, tc.reason)
			}
		})
	}
}

// TestParseKeysRefuses: an evidenceSigners file a pull request could
// weaken is refused, naming the line.
func TestParseKeysRefuses(t *testing.T) {
	t.Parallel()
	key := strings.TrimPrefix(sshkey.NewNotifier(t, "x").Line(), "x ")
	for _, tc := range []struct{ name, file string }{
		{"a certificate authority", "staging cert-authority " + key},
		{"namespaces without evidence", `staging namespaces="git,file" ` + key},
		{"a principal pattern", "stag* " + key},
		{"a bad validity", `staging valid-before="tomorrow" ` + key},
		{"not a key", "staging ssh-ed25519 AAAAB3NzaC1yc2E=\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := evidence.ParseKeys("signers", []byte(tc.file)); err == nil || !strings.Contains(err.Error(), "line 1") {
				t.Fatalf("ParseKeys: %v, want an error naming line 1", err)
			}
		})
	}
}

// TestSignatureInteroperates: evidence signed by Sign verifies with
// ssh-keygen -Y verify (an auditor needs no throughline), and a signature
// ssh-keygen -Y sign made opens.
func TestSignatureInteroperates(t *testing.T) {
	t.Parallel()
	k := sshkey.New(t, "staging")
	dir := t.TempDir()
	data := signedFixture(t)
	evFile := filepath.Join(dir, "ev.json")
	signers := filepath.Join(dir, "signers")
	for f, b := range map[string][]byte{evFile: data, signers: []byte(k.Line())} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-q", "-n", evidence.SignatureNamespace, "-f", k.Private, evFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v: %s", err, out)
	}
	sig, err := os.ReadFile(evFile + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := evidence.ParseKeys("signers", []byte(k.Line()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evidence.Open("ev.json", "staging", data, sig, keys); err != nil {
		t.Fatalf("a signature by ssh-keygen: %v", err)
	}

	n := sshkey.NewNotifier(t, "staging")
	ours, err := evidence.Sign(data, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evFile+".sig", ours, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(signers, []byte(n.Line()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "staging", "-n", evidence.SignatureNamespace, "-s", evFile+".sig")
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y verify of Sign's signature: %v: %s", err, out)
	}
}

func sshFingerprint(n sshkey.Notifier) string { return ssh.FingerprintSHA256(n.PublicKey()) }
