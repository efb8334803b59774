package policy_test

import (
	"testing"

	"github.com/throughline-dev/throughline/policy"
)

// FuzzParseAllowList: the allow-list is read from the repository the CMP
// renders (untrusted). It must never panic, and every accepted entry has a
// usable pattern and a reason, so Match never fails on it.
func FuzzParseAllowList(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages:\n  - pattern: registry.example.test/legacy/*\n    reason: vendor ships tags only (TICKET-1)\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: '[', reason: x}]\n",
		"kind: AllowList\n",
		"a: &a [*a]\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := policy.ParseAllowList(data, "throughline-allowlist.yaml")
		if err != nil {
			return
		}
		for i, im := range a.Images {
			if im.Pattern == "" || im.Reason == "" {
				t.Fatalf("images[%d] accepted without pattern or reason: %+v", i, im)
			}
		}
		_, _ = a.Match("registry.example.test/legacy/app:1.0")
	})
}
