package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// throughline is the CLI, built once by TestMain.
var throughline string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughline) }

// releasePolicy is what docs/release.md tells users to commit: an
// environment whose trust policy names throughline's release key and
// requires its CycloneDX SBOM.
const releasePolicy = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  throughline-release:
    trust:
      signatures:
        - publicKey: keys/throughline-release.pub
      attestations:
        sbom:
          formats: [cyclonedx]
`

// TestReleaseSignedAndVerified is `make release` with IMAGE_REPO and
// SIGNING_KEY on a real registry (Debian's docker-registry): the index is
// built and pushed, signed and its SBOM attested with the caller's key,
// both attached next to it; then a user's `throughline trust verify`
// against a policy naming the public key accepts it, and refuses it
// against another key. Without a key nothing is signed.
func TestReleaseSignedAndVerified(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dir := t.TempDir()
	exe, err := os.Executable() // a Go binary with build info, standing in for throughline's
	if err != nil {
		t.Fatal(err)
	}
	out, refFile := filepath.Join(dir, "image"), filepath.Join(dir, "image.ref")
	err = run(ctx, []string{"-bin", "linux/amd64=" + exe, "-plugin-bin", "linux/amd64=" + exe, "-render-bin", "linux/amd64=" + exe, "-out", out,
		"-plugin", filepath.Join("..", "..", "plugin.yaml"), "-epoch", "1764000000", "-version", "v0.0.0-test",
		"-repo", reg.Host + "/throughline", "-digest-file", refFile})
	if err != nil {
		t.Fatalf("make image: %v", err)
	}
	if err := runSign(ctx, []string{"-ref", refFile, "-dir", out, "-push"}); err == nil || !strings.Contains(err.Error(), "no -key") {
		t.Fatalf("sign without a key: %v", err)
	}
	key := writeKey(t, filepath.Join(dir, "release.key"))
	if err := runSign(ctx, []string{"-key", key, "-ref", refFile, "-dir", out, "-push"}); err != nil {
		t.Fatalf("sign: %v", err)
	}
	ref := strings.TrimSpace(string(must(os.ReadFile(refFile))))

	pub := must(os.ReadFile(filepath.Join(out, "signing-key.pub")))
	res := verify(t, ctx, pub, ref)
	if res.Code != 0 {
		t.Fatalf("trust verify: exit %d: %s", res.Code, res.Stderr)
	}
	var ev struct {
		Items []struct{ Kind, Digest string }
	}
	if err := json.Unmarshal([]byte(res.Stdout), &ev); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range ev.Items {
		kinds = append(kinds, it.Kind)
	}
	t.Logf("throughline trust verify %s:\n%s", ref, res.Stdout)
	if strings.Join(kinds, ",") != "signature,sbom" {
		t.Fatalf("verified evidence %s: want a signature and an SBOM", res.Stdout)
	}

	other := writeKey(t, filepath.Join(dir, "other.key"))
	otherPub := publicPEM(t, other)
	if res := verify(t, ctx, otherPub, ref); res.Code != 3 || !strings.Contains(res.Stderr, "signature-invalid") {
		t.Fatalf("trust verify with another key: exit %d: %s", res.Code, res.Stderr)
	}
}

// verify runs `throughline trust verify` as docs/release.md does, in a
// fresh policy repository naming pub.
func verify(t *testing.T, ctx context.Context, pub []byte, ref string) testenv.CLIResult {
	t.Helper()
	repo, home := t.TempDir(), t.TempDir()
	env := testenv.GitEnv(home)
	if err := os.MkdirAll(filepath.Join(repo, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{"throughline-policy.yaml": []byte(releasePolicy), "keys/throughline-release.pub": pub} {
		if err := os.WriteFile(filepath.Join(repo, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Git(t, ctx, env, repo, "init", "-q", "-b", "main")
	testenv.Git(t, ctx, env, repo, "add", ".")
	testenv.Git(t, ctx, env, repo, "commit", "-q", "-m", "trust throughline releases")
	res, err := testenv.RunCLI(ctx, throughline, env, "trust", "verify", "--repo", repo, "--environment", "throughline-release",
		"--no-cache", ref)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// writeKey writes a new ECDSA P-256 private key (PKCS#8 PEM, as `openssl
// genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` makes) to file.
func writeKey(t *testing.T, file string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func publicPEM(t *testing.T, keyFile string) []byte {
	t.Helper()
	k, err := loadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := k.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(p)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
