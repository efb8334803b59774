package policy

import (
	"encoding/base64"
	"regexp"
	"slices"
)

// A SOPS-encrypted file (https://getsops.io) keeps its keys readable and
// replaces each value by ENC[AES256_GCM,data:...,iv:...,tag:...,type:...],
// and records under a top-level sops: mapping the MAC over the values (itself
// ENC[...]) and the data key encrypted for each recipient: lists of entries
// with an enc field under age, pgp, kms, gcp_kms, azure_kv, hc_vault or
// huaweicloud_kms, or the same lists inside key_groups. Flux's
// kustomize-controller (spec.decryption.provider: sops) and KSOPS decrypt
// such a Secret in the cluster; the repository never holds its values.
// The check is of the form only (no key is at hand to decrypt with); the
// sops library is not imported for it, as it brings every cloud KMS client.

// sopsEncrypted matches a value as sops writes it: AES-256-GCM, a 32-byte
// IV and a 16-byte tag, base64; the type one of those sops encrypts.
var sopsEncrypted = regexp.MustCompile(`^ENC\[AES256_GCM,data:([A-Za-z0-9+/=]*),iv:([A-Za-z0-9+/=]+),tag:([A-Za-z0-9+/=]+),` +
	`type:(str|int|float|bool|bytes)\]$`)

const (
	sopsIVBytes  = 32
	sopsTagBytes = 16
)

// sopsKeyLists are the fields of a sops: mapping (or of one of its
// key_groups) that list the data key encrypted for a recipient.
var sopsKeyLists = []string{"age", "pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "huaweicloud_kms"}

// isSOPSEncrypted reports whether v is a value as sops writes it.
func isSOPSEncrypted(v any) bool {
	s, _ := v.(string)
	m := sopsEncrypted.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	_, errData := base64.StdEncoding.DecodeString(m[1])
	iv, errIV := base64.StdEncoding.DecodeString(m[2])
	tag, errTag := base64.StdEncoding.DecodeString(m[3])
	return errData == nil && errIV == nil && errTag == nil && len(iv) == sopsIVBytes && len(tag) == sopsTagBytes
}

// sopsMetadataProblem says what keeps the object's sops: field from being
// the metadata of a SOPS-encrypted file ("" when it is one): absent, not a
// mapping, without a MAC (ENC[...]) or without a recipient's data key.
func sopsMetadataProblem(obj map[string]any) string {
	v, ok := obj["sops"]
	if !ok {
		return "it has no sops: block"
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "its sops: is not a mapping"
	}
	if !isSOPSEncrypted(m["mac"]) {
		return "its sops.mac is absent, empty or not ENC[...]"
	}
	if hasSOPSKey(m) {
		return ""
	}
	if groups, ok := m["key_groups"].([]any); ok && slices.ContainsFunc(groups, func(g any) bool {
		gm, isMap := g.(map[string]any)
		return isMap && hasSOPSKey(gm)
	}) {
		return ""
	}
	return "its sops: block names no key (an age, pgp, kms, gcp_kms, azure_kv, hc_vault or huaweicloud_kms entry with enc, " +
		"there or in key_groups)"
}

// hasSOPSKey reports whether m lists, for a recipient, the data key
// encrypted (an entry with a non-empty enc).
func hasSOPSKey(m map[string]any) bool {
	for _, f := range sopsKeyLists {
		list, _ := m[f].([]any)
		for _, e := range list {
			if em, ok := e.(map[string]any); ok {
				if enc, _ := em["enc"].(string); enc != "" {
					return true
				}
			}
		}
	}
	return false
}
