package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/signing"
)

// predicateSBOM is the predicate type of the release's SBOM attestation.
const predicateSBOM = trust.PredicateCycloneDX

// runSign is `image sign`: it signs the image index named by -ref (the
// digest file `make image` wrote) with -key, attests its CycloneDX SBOM
// (written by `make image` into -dir), writes both Sigstore bundles and the
// public key into -dir and, with -push, attaches them next to the index in
// its repository: each bundle as an OCI 1.1 referrer (the referrers tag
// sha256-<hex> on a registry without the referrers API), and under
// cosign's tags sha256-<hex>.sig and .att.
func runSign(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image sign", flag.ContinueOnError)
	keyFile := fs.String("key", "", "PEM private key (PKCS#8, SEC 1, PKCS#1 or cosign's encrypted key; password in "+
		"SIGNING_KEY_PASSWORD or COSIGN_PASSWORD)")
	refFile := fs.String("ref", "bin/image.ref", "the index reference by digest (make image's -digest-file)")
	dir := fs.String("dir", "bin/image", "the image directory holding sbom-<hex>.cdx.json; the bundles are written there")
	push := fs.Bool("push", false, "attach the bundles next to the index in its registry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keyFile == "" {
		return errors.New("sign: no -key: nothing is signed")
	}
	data, err := os.ReadFile(*refFile)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	ref := strings.TrimSpace(string(data))
	repo, digest, ok := strings.Cut(ref, "@")
	hex, isSHA := strings.CutPrefix(digest, "sha256:")
	if !ok || !isSHA || len(hex) != 64 {
		return fmt.Errorf("sign: %s: %q is not a reference by sha256 digest", *refFile, ref)
	}
	key, err := loadKey(*keyFile)
	if err != nil {
		return err
	}
	sbom, err := os.ReadFile(filepath.Join(*dir, "sbom-"+hex+".cdx.json"))
	if err != nil {
		return fmt.Errorf("sign: the SBOM of %s (run make image): %w", ref, err)
	}
	sig, att, err := signRelease(ctx, key, repo, digest, sbom)
	if err != nil {
		return err
	}
	pub, err := key.GetPublicKeyPem()
	if err != nil {
		return err
	}
	for file, b := range map[string][]byte{"sig-" + hex + ".sigstore.json": sig, "sbom-" + hex + ".sigstore.json": att,
		"signing-key.pub": []byte(pub)} {
		if err := atomicfile.Write(filepath.Join(*dir, file), b, 0o644); err != nil {
			return fmt.Errorf("sign: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "signed %s: signature %s, SBOM attestation %s (in %s)\n", ref, sha(sig), sha(att), *dir)
	if !*push {
		fmt.Fprintln(os.Stderr, "sign: not pushed (no IMAGE_REPO): the bundles are in", *dir)
		return nil
	}
	return attach(ctx, ref, sig, att)
}

// loadKey reads the private key file, decrypted with SIGNING_KEY_PASSWORD
// (or COSIGN_PASSWORD) when set.
func loadKey(file string) (*signing.Key, error) {
	pemData, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	var password []byte
	for _, v := range []string{"SIGNING_KEY_PASSWORD", "COSIGN_PASSWORD"} {
		if p, ok := os.LookupEnv(v); ok {
			password = []byte(p)
			break
		}
	}
	key, err := signing.LoadKey(pemData, password)
	if err != nil {
		return nil, fmt.Errorf("sign: %s: %w", file, err)
	}
	return key, nil
}

// signRelease signs the signature statement and the SBOM attestation of
// the index digest of repo.
func signRelease(ctx context.Context, key *signing.Key, repo, digest string, sbom []byte) (sig, att []byte, err error) {
	stmt, err := signing.Statement(repo, digest, trust.PredicateSignature, nil)
	if err != nil {
		return nil, nil, err
	}
	if sig, err = signing.Sign(ctx, key, stmt); err != nil {
		return nil, nil, err
	}
	if stmt, err = signing.Statement(repo, digest, predicateSBOM, sbom); err != nil {
		return nil, nil, err
	}
	if att, err = signing.Sign(ctx, key, stmt); err != nil {
		return nil, nil, err
	}
	return sig, att, nil
}

// attach pushes sig and att next to ref: one referrer each, and cosign's
// .sig and .att tags.
func attach(ctx context.Context, ref string, sig, att []byte) error {
	opts := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	for _, b := range []struct {
		data []byte
		pt   string
	}{{sig, trust.PredicateSignature}, {att, predicateSBOM}} {
		m, err := trust.Attach(ctx, ref, trust.BundleMediaType, map[string]string{trust.AnnotationPredicateType: b.pt},
			[][]byte{b.data}, opts)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		fmt.Fprintf(os.Stderr, "pushed %s as the referrer %s of %s\n", sha(b.data), m, ref)
	}
	if err := trust.AttachTag(ctx, ref, ".sig", [][]byte{sig}, opts); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	if err := trust.AttachTag(ctx, ref, ".att", [][]byte{att}, opts); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	fmt.Fprintf(os.Stderr, "pushed cosign's tags .sig and .att of %s\n", ref)
	return nil
}

func sha(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }
