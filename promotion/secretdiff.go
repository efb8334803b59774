package promotion

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/secretdigest"
)

// minSecretNeedle: a Secret value at least this long is hidden wherever a
// changed value of another object contains it; a shorter one only when it
// is the whole value.
const minSecretNeedle = 4

// secretNeedles are the values of the Secrets of a diff (data decoded and
// as written, stringData), which no Change may show.
type secretNeedles map[string]bool

// collectSecrets returns the values under data and stringData of every v1
// Secret of the object sets.
func collectSecrets(sets ...[]render.Object) secretNeedles {
	n := secretNeedles{}
	for _, objs := range sets {
		for _, o := range objs {
			if !policy.IsSecret(o.ID()) {
				continue
			}
			for _, f := range []string{"data", "stringData"} {
				m, _ := o.Map[f].(map[string]any)
				for _, v := range m {
					s, ok := v.(string)
					if !ok || strings.TrimSpace(s) == "" {
						continue
					}
					n[s] = true
					if f == "data" {
						if d, err := base64.StdEncoding.DecodeString(s); err == nil && len(d) > 0 {
							n[string(d)] = true
						}
					}
				}
			}
		}
	}
	return n
}

// shows reports whether the text s shows a Secret value.
func (n secretNeedles) shows(s string) bool {
	for v := range n {
		if s == v || len(v) >= minSecretNeedle && strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// redactChange replaces the values of a change by their digests when they
// belong to a Secret (any field but its name, namespace, labels, type and
// immutable) or show a Secret value anywhere else: a changed Secret value
// is shown as changed, never as itself.
func (n secretNeedles) redactChange(c *Change, a, b any) {
	secret := policy.IsSecret(c.Object) && !secretPublicField(c.Field)
	if !secret && !n.shows(fmt.Sprint(a)) && !n.shows(fmt.Sprint(b)) {
		return
	}
	c.Before, c.After, c.Redacted = shortHash(c.Field, a), shortHash(c.Field, b), true
}

// secretPublicField reports whether a field of a Secret is not a value:
// its identity, labels, type and immutability.
func secretPublicField(field string) bool {
	switch {
	case field == "apiVersion", field == "kind", field == "type", field == "immutable",
		field == "metadata.name", field == "metadata.namespace", strings.HasPrefix(field, "metadata.labels."):
		return true
	}
	return false
}

// shortHash is the value's digest keyed per run (package secretdigest):
// of the decoded bytes of a data value (so data and stringData of the same
// value agree), of the string, else of its JSON. nil is "<none>".
func shortHash(field string, v any) string {
	if v == nil {
		return "<none>"
	}
	var b []byte
	switch t := v.(type) {
	case string:
		b = []byte(t)
		if strings.HasPrefix(field, "data.") {
			if d, err := base64.StdEncoding.DecodeString(t); err == nil {
				b = d
			}
		}
	default:
		j, err := json.Marshal(t)
		if err != nil {
			j = []byte(fmt.Sprint(t))
		}
		b = j
	}
	return secretdigest.Of(b)
}
