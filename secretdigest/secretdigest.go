// Package secretdigest is how every output shows a Secret value that
// changed: an HMAC-SHA256 under a key drawn once per process and never
// written anywhere. Within one run equal values show equal digests, so a
// reviewer tells "changed" from "same"; without the key nobody can test a
// guessed value against a digest, as an unkeyed hash of a low-entropy
// value let anyone do offline.
package secretdigest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// Prefix starts every digest.
const Prefix = "hmac:"

// hexDigits is the number of hex digits shown (48 bits: a reviewer compares
// them by eye; they only need to tell the few values of one report apart).
const hexDigits = 12

// key is the process's key: 32 random bytes.
var key = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand crashes the program rather than return an error
	return k
})

// Of is the digest of value under this process's key: Prefix and 12 hex
// digits.
func Of(value []byte) string { return With(key(), value) }

// With is the digest of value under k (for tests that show what another
// key, another run, makes of the same value).
func With(k, value []byte) string {
	mac := hmac.New(sha256.New, k)
	mac.Write(value)
	return Prefix + hex.EncodeToString(mac.Sum(nil))[:hexDigits]
}
