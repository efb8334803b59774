package breakglass

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// secretValue reports whether the field of c holds a value of a v1 Secret
// (anything but its identity, labels, type and immutability): such a value
// is never printed, posted or committed as evidence, only its short hash.
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

// shown is v as a message, a PR body or the evidence may show it: a short
// hash (sha256: and 8 hex digits of its JSON) for a Secret's value.
func (c Change) shown(v any) any {
	if v == nil || !c.secretValue() {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])[:8] + " (Secret value not shown)"
}

// MarshalJSON writes the change with a Secret's values replaced by their
// short hashes (-o json, the break-glass evidence).
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	p := plain(c)
	p.Before, p.Live, p.Proposed = c.shown(c.Before), c.shown(c.Live), c.shown(c.Proposed)
	return json.Marshal(p)
}
