// Package sshkey makes SSH signing keys for tests: ed25519 key pairs made
// by ssh-keygen in a test's temporary directory, never committed.
package sshkey

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Key is one key pair.
type Key struct {
	// Principal is the name the allowed-signers line gives the key.
	Principal string
	// Private is the private key file, Public the public key ("ssh-ed25519 AAAA...").
	Private, Public string
}

// New makes an ed25519 key pair for principal in a temporary directory
// (skipping the test when ssh-keygen is missing, failing it in CI, where
// .ci/run installs openssh-client: a signed-approval test never passes by
// not running).
func New(t testing.TB, principal string) Key {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ssh-keygen is not installed (openssh-client): CI must run the signed-approval tests")
		}
		t.Skip("ssh-keygen is not installed (openssh-client)")
	}
	f := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", principal, "-f", f).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, err := os.ReadFile(f + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(pub))
	return Key{Principal: principal, Private: f, Public: fields[0] + " " + fields[1]}
}

// Line is the key's allowed-signers line.
func (k Key) Line() string { return k.Principal + " " + k.Public + "\n" }

// Signers is an allowed-signers file listing keys.
func Signers(keys ...Key) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k.Line())
	}
	return b.String()
}

// Env is the environment that makes git sign with the key
// (user.signingkey, gpg.format=ssh) and name its author and committer
// after the principal.
func (k Key) Env() []string {
	return []string{
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=user.signingkey", "GIT_CONFIG_VALUE_0=" + k.Private,
		"GIT_CONFIG_KEY_1=gpg.format", "GIT_CONFIG_VALUE_1=ssh",
		"GIT_AUTHOR_NAME=" + k.Principal, "GIT_AUTHOR_EMAIL=" + k.Principal,
		"GIT_COMMITTER_NAME=" + k.Principal, "GIT_COMMITTER_EMAIL=" + k.Principal,
	}
}

// Notifier is a notifier's evidence signing key, made in process (no
// ssh-keygen: every test that writes evidence signs it).
type Notifier struct {
	ssh.Signer
	// Environments are the principals its evidenceSigners line lists.
	Environments []string
	key          ed25519.PrivateKey
}

// NewNotifier makes an ed25519 evidence signing key for envs.
func NewNotifier(t testing.TB, envs ...string) Notifier {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return notifier(t, priv, envs)
}

// FixedNotifier is the ed25519 evidence signing key for envs derived from
// seed: the same key, and the same signature of the same bytes, at every
// run, for a fixture whose commit ids must not change (golden pages show
// them). A test key only: anyone who reads seed has it.
func FixedNotifier(t testing.TB, seed string, envs ...string) Notifier {
	t.Helper()
	s := sha256.Sum256([]byte(seed))
	return notifier(t, ed25519.NewKeyFromSeed(s[:]), envs)
}

func notifier(t testing.TB, priv ed25519.PrivateKey, envs []string) Notifier {
	t.Helper()
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return Notifier{Signer: s, Environments: envs, key: priv}
}

// Line is the key's evidenceSigners line.
func (n Notifier) Line() string {
	return strings.Join(n.Environments, ",") + " " + string(ssh.MarshalAuthorizedKey(n.PublicKey()))
}

// PrivatePEM is the key as an OpenSSH private key file's content.
func (n Notifier) PrivatePEM(t testing.TB) []byte {
	t.Helper()
	b, err := ssh.MarshalPrivateKey(n.key, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(b)
}

// EvidenceSignersFile is where the test repositories keep the
// evidenceSigners file their policy names.
const EvidenceSignersFile = ".throughline/evidence-signers"

// PolicyLine is the policy line naming EvidenceSignersFile.
const PolicyLine = "evidenceSigners: " + EvidenceSignersFile + "\n"

// Policy is a policy that says nothing else.
const Policy = "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\n" + PolicyLine
