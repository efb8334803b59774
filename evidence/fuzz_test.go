package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"golang.org/x/crypto/ssh"
)

// FuzzParse: evidence files are read from the GitOps repository, which
// anyone with push access writes. Parse must never panic, and whatever it
// accepts must be valid and encode to bytes that parse back to the same
// encoding.
func FuzzParse(f *testing.F) {
	good, err := record().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{good, []byte(`{}`), []byte(`{"schemaVersion":"evidence/v1"}`), []byte(`[]`), good[:len(good)/2]} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("fuzz.json", data)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid record: %v", err)
		}
		once, err := r.Marshal()
		if err != nil {
			t.Fatalf("an accepted record does not encode: %v", err)
		}
		again, err := Parse("fuzz.json", once)
		if err != nil {
			t.Fatalf("its encoding does not parse: %v\n%s", err, once)
		}
		twice, err := again.Marshal()
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("encoding is not stable (%v):\n%s\n%s", err, once, twice)
		}
	})
}

// FuzzOpen: the signature file and the evidenceSigners file come from the
// repository too. Open and ParseKeys never panic, and Open never accepts a
// signature of other bytes than the file's.
func FuzzOpen(f *testing.F) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		f.Fatal(err)
	}
	good, err := record().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	sig, err := Sign(good, signer)
	if err != nil {
		f.Fatal(err)
	}
	line := []byte(record().Environment + " " + string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	f.Add(good, sig, line)
	f.Add(good, sig[:len(sig)/2], line)
	f.Add([]byte(`{}`), sig, []byte("staging,production cert-authority "+string(ssh.MarshalAuthorizedKey(signer.PublicKey()))))
	f.Fuzz(func(t *testing.T, data, sig, signers []byte) {
		keys, err := ParseKeys("signers", signers)
		if err != nil {
			return
		}
		env := record().Environment
		if _, err := Open("fuzz.json", env, data, sig, keys); err == nil && !bytes.Equal(data, good) {
			t.Fatalf("Open accepted bytes the key never signed:\n%s", data)
		}
	})
}
