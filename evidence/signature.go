package evidence

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/throughline-dev/throughline/gitrepo"
)

// SignatureNamespace is the SSHSIG namespace of evidence signatures
// (ssh-keygen -Y sign -n): a signature made for anything else (a Git
// commit, a file) never counts as one of evidence.
const SignatureNamespace = "evidence@throughline.dev"

// signatureHash is the hash the notifier signs with.
const signatureHash = sshsig.HashSHA512

// maxSignatureSize caps a signature file (an armored ed25519 signature is
// about 300 bytes; an RSA-4096 one about 1,000).
const maxSignatureSize = 16 << 10

// SignaturePath is the signature file of an evidence file: beside it,
// with ".sig" appended.
func SignaturePath(file string) string { return file + ".sig" }

// Sign is the armored SSH signature (ssh-keygen -Y sign format) of an
// evidence file's bytes by signer.
func Sign(data []byte, signer ssh.Signer) ([]byte, error) {
	sig, err := sshsig.Sign(bytes.NewReader(data), signer, signatureHash, SignatureNamespace)
	if err != nil {
		return nil, fmt.Errorf("signing evidence with %s: %w", ssh.FingerprintSHA256(signer.PublicKey()), err)
	}
	return sshsig.Armor(sig), nil
}

// Keys are the notifier keys a policy lists (evidenceSigners): the lines
// of an allowed-signers file whose principals are the environments whose
// evidence each key may sign.
type Keys struct {
	// File is the allowed-signers file the keys were read from.
	File string
	keys []key
	// sum identifies the keys by their file's name and content (set by
	// ParseKeys; zero for Keys made otherwise).
	sum [sha256.Size]byte
}

// Sum identifies k by the name and content of the file ParseKeys read
// (two Keys with the same Sum accept the same signatures); ok is false
// for Keys ParseKeys did not make, and for nil.
func (k *Keys) Sum() (sum [sha256.Size]byte, ok bool) {
	if k == nil || k.sum == ([sha256.Size]byte{}) {
		return sum, false
	}
	return k.sum, true
}

type key struct {
	line   int
	envs   []string
	pub    ssh.PublicKey
	ns     []string // the namespaces="..." option (nil: any)
	after  time.Time
	before time.Time
}

// ParseKeys reads an allowed-signers file of notifier keys. It refuses
// certificate authorities (a notifier signs with its own key) and
// namespaces that exclude SignatureNamespace.
func ParseKeys(file string, data []byte) (*Keys, error) {
	lines, err := gitrepo.ParseAllowedSigners(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	k := &Keys{File: file, sum: sha256.Sum256([]byte(file + "\x00" + string(data)))}
	for _, l := range lines {
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l.KeyType + " " + l.Key))
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", file, l.Line, err)
		}
		kk := key{line: l.Line, envs: l.Principals, pub: pub}
		if err := kk.options(l.Options); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", file, l.Line, err)
		}
		k.keys = append(k.keys, kk)
	}
	return k, nil
}

// options reads a line's options (gitrepo.ParseAllowedSigners checked
// their syntax).
func (k *key) options(opts string) error {
	if opts == "" {
		return nil
	}
	for _, o := range strings.Split(opts, ",") {
		name, value, _ := strings.Cut(o, "=")
		value = strings.Trim(value, `"`)
		var err error
		switch strings.ToLower(name) {
		case "cert-authority":
			return errors.New("cert-authority: a notifier signs evidence with its own key, not a certificate")
		case "namespaces":
			k.ns = strings.Split(value, ",")
			if !slices.Contains(k.ns, SignatureNamespace) {
				return fmt.Errorf("namespaces=%q: does not include %s, so the key can sign no evidence", value, SignatureNamespace)
			}
		case "valid-after":
			k.after, err = signerTime(value)
		case "valid-before":
			k.before, err = signerTime(value)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// signerTime is an allowed-signers time (YYYYMMDD[HHMM[SS]], optionally
// followed by Z), read as UTC.
func signerTime(v string) (time.Time, error) {
	v = strings.TrimSuffix(v, "Z")
	for _, layout := range []string{"20060102150405", "200601021504", "20060102"} {
		if len(v) == len(layout) {
			if t, err := time.Parse(layout, v); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("%q: want YYYYMMDD[HHMM[SS]][Z]", v)
}

// SignatureError is evidence that is not signed by a key listed for its
// environment: no signature, a signature by another key, by a key listed
// for other environments or outside its validity, or one that does not
// verify the file's bytes.
type SignatureError struct {
	// File is the evidence file, Keys the allowed-signers file.
	File, Keys string
	// Key is the signing key's fingerprint ("" when there is no
	// signature).
	Key    string
	Reason string
}

func (e *SignatureError) Error() string { return e.File + ": " + e.Problem() }

// Problem is the error without the file's name: the key found and why it
// does not prove the file.
func (e *SignatureError) Problem() string {
	if e.Key == "" {
		return e.Reason
	}
	return fmt.Sprintf("signed by %s: %s", e.Key, e.Reason)
}

// Open checks that sig is a valid signature of data, the bytes of the
// evidence file of env, by a key keys list for env, and then parses it
// (the parser never sees bytes whose signature did not verify). A
// signature problem is a *SignatureError; a file that does not parse is
// Parse's error. keys nil is a policy that lists no evidence signers: no
// evidence is accepted, signed or not (a notifier key is not optional).
func Open(file, env string, data, sig []byte, keys *Keys) (*Record, error) {
	if keys == nil {
		return nil, &SignatureError{File: file, Reason: "the policy lists no evidenceSigners: runtime evidence counts only signed by a notifier key " +
			"it lists for " + env}
	}
	fail := func(fp, format string, args ...any) error {
		return &SignatureError{File: file, Keys: keys.File, Key: fp, Reason: fmt.Sprintf(format, args...)}
	}
	if sig == nil {
		return nil, fail("", "no signature file %s: the policy's evidenceSigners (%s) requires evidence signed by a notifier",
			SignaturePath(file), keys.File)
	}
	if len(sig) > maxSignatureSize {
		return nil, fail("", "%s is %d bytes, over the %d byte limit", SignaturePath(file), len(sig), maxSignatureSize)
	}
	s, err := sshsig.Unarmor(sig)
	if err != nil {
		return nil, fail("", "%s is not an SSH signature: %v", SignaturePath(file), err)
	}
	fp := ssh.FingerprintSHA256(s.PublicKey)
	var listed *key
	var others []string
	for i := range keys.keys {
		k := &keys.keys[i]
		if ssh.FingerprintSHA256(k.pub) != fp {
			continue
		}
		if slices.Contains(k.envs, env) {
			listed = k
			break
		}
		others = append(others, k.envs...)
	}
	switch {
	case listed == nil && others == nil:
		return nil, fail(fp, "%s lists no such key", keys.File)
	case listed == nil:
		return nil, fail(fp, "%s lists that key for %s, not for %s", keys.File, strings.Join(others, ", "), env)
	case s.Namespace != SignatureNamespace:
		return nil, fail(fp, "the signature is for %q, not evidence (%s)", s.Namespace, SignatureNamespace)
	case listed.ns != nil && !slices.Contains(listed.ns, SignatureNamespace):
		return nil, fail(fp, "line %d of %s does not allow namespace %s", listed.line, keys.File, SignatureNamespace)
	}
	if err := sshsig.Verify(bytes.NewReader(data), s, listed.pub, s.HashAlgorithm, SignatureNamespace); err != nil {
		return nil, fail(fp, "the signature does not verify the file's content (changed after signing?): %v", err)
	}
	rec, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	switch {
	case !listed.after.IsZero() && rec.Time.Before(listed.after):
		return nil, fail(fp, "the evidence is dated %s, before the key's valid-after %s (line %d of %s)", rec.Time.UTC().Format(time.RFC3339),
			listed.after.Format(time.RFC3339), listed.line, keys.File)
	case !listed.before.IsZero() && !rec.Time.Before(listed.before):
		return nil, fail(fp, "the evidence is dated %s, not before the key's valid-before %s (line %d of %s)", rec.Time.UTC().Format(time.RFC3339),
			listed.before.Format(time.RFC3339), listed.line, keys.File)
	}
	return rec, nil
}
