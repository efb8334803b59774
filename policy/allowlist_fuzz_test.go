package policy_test

import (
	"slices"
	"testing"

	"github.com/throughline-dev/throughline/policy"
)

// FuzzParseAllowList: the allow-list is read from the repository the CMP
// renders (untrusted). It must never panic, and every accepted entry has a
// usable pattern (or a name) and a reason and names each environment once,
// so Match and MatchSecret never fail on it and an entry scoped to
// environments never holds outside them.
func FuzzParseAllowList(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages:\n  - pattern: registry.example.test/legacy/*\n    reason: vendor ships tags only (TICKET-1)\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: '[', reason: x}]\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: 'r/*', environments: [dev], reason: x}]\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: 'r/*', environments: [dev, dev], reason: x}]\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: [{pattern: 'r/*', environments: [], reason: x}]\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: []\nsecrets: [{name: s, namespace: n, environments: [dev], reason: x}]\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: AllowList\nimages: []\nsecrets: [{name: s, reason: x}]\n",
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
			checkEnvs(t, im.Environments)
		}
		for i, s := range a.Secrets {
			if s.Name == "" || s.Reason == "" || len(s.Environments) == 0 {
				t.Fatalf("secrets[%d] accepted without name, reason or environments: %+v", i, s)
			}
			checkEnvs(t, s.Environments)
		}
		for _, env := range []string{"", "dev", "production"} {
			if im, ok := a.Match("registry.example.test/legacy/app:1.0", env); ok && im.Environments != nil && !slices.Contains(im.Environments, env) {
				t.Fatalf("image entry %+v held in environment %q", im, env)
			}
			if s, ok := a.MatchSecret("n", "s", env); ok && !slices.Contains(s.Environments, env) {
				t.Fatalf("secret entry %+v held in environment %q", s, env)
			}
		}
	})
}

func checkEnvs(t *testing.T, envs []string) {
	t.Helper()
	if envs != nil && len(envs) == 0 {
		t.Fatalf("an empty environments list was accepted")
	}
	for i, e := range envs {
		if e == "" || slices.Contains(envs[:i], e) {
			t.Fatalf("environments %q accepted (empty or named twice)", envs)
		}
	}
}
