package policy

import (
	"fmt"
	"slices"
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
// ExternalSecret, SealedSecret, a file encrypted whole by SOPS), unless the
// allow-list names it for env. A SOPS-encrypted Secret passes when its sops:
// block has a MAC and a key and every value is ENC[...]; one partly
// encrypted (encrypted_regex, unencrypted_suffix) is refused naming its
// plain keys. The violation names the fields and their keys, never a value.
func (r *Result) checkSecret(o render.Object, id render.ID, allow *AllowList, env string) {
	if !IsSecret(id) {
		return
	}
	// fields and keys carry values; plainFields and plain those not ENC[...].
	var fields, keys, plainFields, plain []string
	encrypted := 0
	for _, f := range secretFields {
		v, ok := o.Map[f]
		if !ok || v == nil {
			continue
		}
		fieldPlain := false
		if m, isMap := v.(map[string]any); isMap {
			if len(m) == 0 {
				continue
			}
			for k, val := range m {
				keys = append(keys, f+"."+k)
				switch {
				case isSOPSEncrypted(val):
					encrypted++
				case val == "": // holds nothing: sops leaves it as it is
				default:
					plain, fieldPlain = append(plain, f+"."+k), true
				}
			}
		} else {
			keys, plain, fieldPlain = append(keys, f), append(plain, f), true
		}
		fields = append(fields, f)
		if fieldPlain {
			plainFields = append(plainFields, f)
		}
	}
	if len(fields) == 0 {
		return
	}
	sopsProblem := sopsMetadataProblem(o.Map)
	if sopsProblem == "" && len(plain) == 0 {
		return // wholly SOPS-encrypted: a reference the controller decrypts
	}
	if sopsProblem == "" {
		fields = plainFields
	}
	field := strings.Join(fields, ", ")
	if entry, ok := allow.MatchSecret(id.Namespace, id.Name, env); ok {
		r.Exceptions = append(r.Exceptions, Exception{Secret: entry.Name, Reason: entry.Reason, Object: id.String(), Field: field})
		return
	}
	in := "the render names no environment, so no secrets[] entry of the allow-list can hold"
	if env != "" {
		in = fmt.Sprintf("no secrets[] entry of the allow-list names it in environment %q", env)
	}
	_, hasSOPS := o.Map["sops"]
	var reason string
	switch {
	case sopsProblem == "" && encrypted > 0:
		reason = fmt.Sprintf("the Secret is partly SOPS-encrypted: keys %s are plain (values not shown): encrypt every value of data "+
			"and stringData (no encrypted_regex, unencrypted_suffix or the like that leaves one out); %s", keyList(plain), in)
	case sopsProblem == "":
		reason = fmt.Sprintf("the Secret has a sops: block but keys %s are plain (values not shown): encrypt every value of data "+
			"and stringData with sops; %s", keyList(plain), in)
	case !hasSOPS && encrypted == 0:
		reason = fmt.Sprintf("a Secret carries values in the desired state (keys %s; values not shown): commit a reference instead "+
			"(ExternalSecret, SealedSecret, an encrypted file); %s", keyList(keys), in)
	default:
		reason = fmt.Sprintf("a Secret carries values in the desired state (keys %s; values not shown) and is not a SOPS-encrypted file: "+
			"%s (commit the file as sops wrote it, or another reference: ExternalSecret, SealedSecret); %s", keyList(keys), sopsProblem, in)
	}
	r.Violations = append(r.Violations, Violation{Rule: RuleSecretPlaintext, File: o.Source, Object: id.String(), Field: field, Reason: reason})
}

// keyList is the sorted keys, at most 8 named, joined.
func keyList(keys []string) string {
	keys = slices.Clone(keys)
	sort.Strings(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], fmt.Sprintf("and %d more", len(keys)-8))
	}
	return strings.Join(keys, ", ")
}
