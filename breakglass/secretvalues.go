package breakglass

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/throughline-dev/throughline/secretdigest"
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

// secretDigest is the digest keyed per run (package secretdigest) of v's
// JSON.
func secretDigest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	return secretdigest.Of(b)
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
	return secretDigest(v) + " (Secret value not shown; keyed per run)"
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
