package breakglass

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// secretValue reports whether the field of c holds a value of a v1 Secret
// (anything but its identity, labels, type and immutability): such a value
// is never printed, posted or committed as evidence, only its keyed digest.
// The object is known by its text (Kind.group namespace/name: a core
// Secret is "Secret ns/name"), so a Change read back from evidence is
// judged alike.
func (c Change) secretValue() bool {
	if !strings.HasPrefix(c.Object, "Secret ") || c.Path == "" {
		return false
	}
	switch {
	case c.Path == "type", c.Path == "immutable", c.Path == "metadata.name", c.Path == "metadata.namespace",
		strings.HasPrefix(c.Path, "metadata.labels."):
		return false
	}
	return true
}

// digestKey is the key of the digests shown for Secret values: 32 random
// bytes drawn once per process and never written anywhere. Within one run
// (one write-back: its output, PR body, record and so the evidence) equal
// values show equal digests, so a reviewer tells "changed" from "same";
// without the key nobody can test a guessed value against a digest, as the
// unkeyed sha256 shown before let anyone do offline.
var digestKey = sync.OnceValue(func() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails: crypto/rand crashes the program rather than return an error
	return key
})

// secretDigestHex is the number of hex digits of the HMAC shown (48 bits:
// a reviewer compares them by eye, and they need no more than to tell the
// few values of one report apart).
const secretDigestHex = 12

// secretDigest is "hmac:" and the first hex digits of HMAC-SHA256 under key
// of v's JSON.
func secretDigest(key []byte, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	return "hmac:" + hex.EncodeToString(mac.Sum(nil))[:secretDigestHex]
}

// shown is v as a message, a PR body or the evidence may show it: for a
// Secret's value, its digest keyed per run. A change read back from JSON
// (the record, for the evidence) holds what shown made of its values
// already, under the key of the run that wrote it: it is shown as it is, so
// the record, the PR body and the evidence show one digest.
func (c Change) shown(v any) any {
	if v == nil || !c.secretValue() || c.readBack {
		return v
	}
	return secretDigest(digestKey(), v) + " (Secret value not shown; keyed per run)"
}

// MarshalJSON writes the change with a Secret's values replaced by their
// keyed digests (-o json, the record, the break-glass evidence).
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	p := plain(c)
	p.Before, p.Live, p.Proposed = c.shown(c.Before), c.shown(c.Live), c.shown(c.Proposed)
	return json.Marshal(p)
}

// UnmarshalJSON reads a change MarshalJSON wrote, strictly (an unknown field
// is refused, as the record and the evidence are read), marked as read back:
// a Secret's values in it are digests already.
func (c *Change) UnmarshalJSON(data []byte) error {
	type plain Change
	var p plain
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*c = Change(p)
	c.readBack = true
	return nil
}
