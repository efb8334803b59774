package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/throughline-dev/throughline/render"
)

// IsSecret reports whether id is a core-group Secret (v1 Secret), the only
// kind whose data the Secret rule and the diffs treat as a value never to
// show.
func IsSecret(id render.ID) bool { return id.Group == "" && id.Kind == "Secret" }

// secretFields are the fields of a Secret that carry its values.
var secretFields = []string{"data", "stringData"}

// checkSecret applies the Secret rule to one object: a v1 Secret may not
// carry data or stringData in the desired state (it enters as a reference:
// ExternalSecret, SealedSecret, an encrypted file), unless the allow-list
// names it for env. The violation names the fields and their keys, never a
// value.
func (r *Result) checkSecret(o render.Object, id render.ID, allow *AllowList, env string) {
	if !IsSecret(id) {
		return
	}
	var fields, keys []string
	for _, f := range secretFields {
		v, ok := o.Map[f]
		if !ok || v == nil {
			continue
		}
		if m, isMap := v.(map[string]any); isMap {
			if len(m) == 0 {
				continue
			}
			for k := range m {
				keys = append(keys, f+"."+k)
			}
		} else {
			keys = append(keys, f)
		}
		fields = append(fields, f)
	}
	if len(fields) == 0 {
		return
	}
	field := strings.Join(fields, ", ")
	if entry, ok := allow.MatchSecret(id.Namespace, id.Name, env); ok {
		r.Exceptions = append(r.Exceptions, Exception{Secret: entry.Name, Reason: entry.Reason, Object: id.String(), Field: field})
		return
	}
	sort.Strings(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], fmt.Sprintf("and %d more", len(keys)-8))
	}
	in := "the render names no environment, so no secrets[] entry of the allow-list can hold"
	if env != "" {
		in = fmt.Sprintf("no secrets[] entry of the allow-list names it in environment %q", env)
	}
	r.Violations = append(r.Violations, Violation{
		Rule: RuleSecretPlaintext, File: o.Source, Object: id.String(), Field: field,
		Reason: fmt.Sprintf("a Secret carries values in the desired state (keys %s; values not shown): commit a reference instead "+
			"(ExternalSecret, SealedSecret, an encrypted file); %s", strings.Join(keys, ", "), in),
	})
}
