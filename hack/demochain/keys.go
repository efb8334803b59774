package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/trust/signing"
)

// keys are the demo's throwaway keys, made at every run. The private
// halves stay in the demo directory's keys/ (never in the GitOps
// repository); the public halves are committed in the repository.
type keys struct {
	dir string
	// ci signs the images and their attestations (ECDSA P-256).
	ci    *signing.Key
	ciPub string
	// alice and bob are the production approvers' SSH signing keys
	// (private key files, as git's user.signingkey takes them).
	alice, bob string
	// evidence is the notifier's evidence signing key.
	evidence     ssh.Signer
	evidenceFile string
}

func newKeys(dir string) (*keys, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	k := &keys{dir: dir}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		return nil, err
	}
	ciPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "ci.key"), ciPEM, 0o600); err != nil {
		return nil, err
	}
	if k.ci, err = signing.LoadKey(ciPEM, nil); err != nil {
		return nil, err
	}
	if k.ciPub, err = k.ci.GetPublicKeyPem(); err != nil {
		return nil, err
	}
	for _, who := range []struct {
		file *string
		name string
	}{{&k.alice, "alice"}, {&k.bob, "bob"}, {&k.evidenceFile, "notifier-evidence"}} {
		if *who.file, err = sshKey(dir, who.name); err != nil {
			return nil, err
		}
	}
	// The notifier reads its key as serve does (ServiceConfig.EvidenceKeyFile).
	if k.evidence, err = notifier.EvidenceSigner(k.evidenceFile); err != nil {
		return nil, err
	}
	return k, nil
}

// sshKey writes a new ed25519 OpenSSH private key dir/name (and name.pub)
// and returns its path.
func sshKey(dir, name string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, name+" (throughline demo key)")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", err
	}
	return file, os.WriteFile(file+".pub", ssh.MarshalAuthorizedKey(sp), 0o644)
}

// authorized is the public key line of the private key file's .pub.
func authorized(file string) (string, error) {
	b, err := os.ReadFile(file + ".pub")
	return strings.TrimSpace(string(b)), err
}

// evidenceSignersFile is where the demo's policy names its evidence signers.
const evidenceSignersFile = "keys/evidence-signers"

// install writes the public halves into the GitOps work tree: keys/ci.pub
// (the trust policy of staging and production reads it),
// allowed-signers (alice and bob, namespaces="git"), keys/evidence-signers
// (the notifier's key for staging and production) and its
// evidenceSigners line in throughline-policy.yaml.
func (k *keys) install(work string) error {
	alice, err := authorized(k.alice)
	if err != nil {
		return err
	}
	bob, err := authorized(k.bob)
	if err != nil {
		return err
	}
	notif := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k.evidence.PublicKey())))
	const note = "# Throwaway keys of make demo (hack/demochain), made at every run: not anyone's keys.\n"
	files := map[string]string{
		"keys/ci.pub": k.ciPub,
		"allowed-signers": note + `alice@example.com namespaces="git" ` + alice + "\n" +
			`bob@example.com namespaces="git" ` + bob + "\n",
		evidenceSignersFile: "staging,production " + notif + "\n",
		"keys/README.md": note + "keys/ci.pub signs the images, keys/evidence-signers lists the notifier's evidence key; " +
			"alice's and bob's are in allowed-signers. The private halves are in the demo directory's keys/, outside this repository.\n",
	}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(work, filepath.FromSlash(f)), []byte(data), 0o644); err != nil {
			return err
		}
	}
	pol := filepath.Join(work, "throughline-policy.yaml")
	data, err := os.ReadFile(pol)
	if err != nil {
		return err
	}
	if strings.Contains(string(data), "\nevidenceSigners:") {
		return fmt.Errorf("%s already names evidenceSigners", pol)
	}
	data = append(data, "# The notifier's evidence signing key (the demo's; docs/notifier.md).\nevidenceSigners: "+evidenceSignersFile+"\n"...)
	return os.WriteFile(pol, data, 0o644)
}
