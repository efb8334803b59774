package policy_test

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/policy"
)

// secretValue is the needle: no violation, exception or message may carry it.
const secretValue = "hunter2-plaintext"

const secretAllowList = `apiVersion: throughline.dev/v1alpha1
kind: AllowList
images:
  - pattern: "r.example.test/vendor/debug-agent:*"
    environments: [dev]
    reason: "dev-only debug sidecar (SEC-1)"
  - pattern: "r.example.test/vendor/everywhere:*"
    reason: "every environment (SEC-2)"
secrets:
  - name: dev-fixture
    namespace: checkout-dev
    environments: [dev]
    reason: "a throwaway fixture password for the dev database (SEC-3)"
`

// TestSecretRule: a v1 Secret carrying data or stringData is refused
// (naming the object, the fields and the keys, never the value) unless a
// secrets[] entry names it in the render's environment.
func TestSecretRule(t *testing.T) {
	t.Parallel()
	allow, err := policy.ParseAllowList([]byte(secretAllowList), policy.AllowListFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(ns, name, body string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + ", namespace: " + ns + "}\n" + body
	}
	for _, tc := range []struct {
		name, doc, env string
		refused        bool
		field          string
	}{
		{"stringData", secret("checkout", "db", "stringData: {password: "+secretValue+"}\n"), "production", true, "stringData"},
		{"data", secret("checkout", "db", "data: {password: aHVudGVyMi1wbGFpbnRleHQ=}\n"), "production", true, "data"},
		{"both", secret("checkout", "db", "data: {a: YQ==}\nstringData: {password: "+secretValue+"}\n"), "staging", true, "data, stringData"},
		{"data not a map", secret("checkout", "db", "data: "+secretValue+"\n"), "dev", true, "data"},
		{"no environment", secret("checkout-dev", "dev-fixture", "stringData: {password: "+secretValue+"}\n"), "", true, "stringData"},
		{"allow-listed in dev", secret("checkout-dev", "dev-fixture", "stringData: {password: "+secretValue+"}\n"), "dev", false, ""},
		{"dev entry in production", secret("checkout-dev", "dev-fixture", "stringData: {password: "+secretValue+"}\n"), "production", true, "stringData"},
		{"dev entry, other namespace", secret("checkout", "dev-fixture", "stringData: {password: "+secretValue+"}\n"), "dev", true, "stringData"},
		{"empty data", secret("checkout", "db", "data: {}\nstringData: {}\n"), "production", false, ""},
		{"no data (a reference's target)", secret("checkout", "db", "type: kubernetes.io/service-account-token\n"), "production", false, ""},
		{"another group's Secret", "apiVersion: example.test/v1\nkind: Secret\nmetadata: {name: db}\ndata: {password: x}\n", "production", false, ""},
		{"SealedSecret", "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata: {name: db}\nspec: {encryptedData: {password: AgB}}\n",
			"production", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := policy.CheckObjects(objects(t, tc.doc), allow, tc.env)
			if !tc.refused {
				if len(res.Violations) != 0 {
					t.Fatalf("refused: %v", res.Err())
				}
				return
			}
			if len(res.Violations) != 1 {
				t.Fatalf("violations %+v, want one", res.Violations)
			}
			v := res.Violations[0]
			if v.Rule != policy.RuleSecretPlaintext || v.Field != tc.field || v.File != "app/manifests.yaml" || !strings.HasPrefix(v.Object, "Secret ") {
				t.Errorf("violation %+v, want rule %s field %q", v, policy.RuleSecretPlaintext, tc.field)
			}
			if msg := res.Err().Error(); strings.Contains(msg, secretValue) || strings.Contains(msg, "aHVudGVyMi") || v.Value != "" {
				t.Errorf("the refusal shows the value: %s (value %q)", msg, v.Value)
			}
		})
	}
	res := policy.CheckObjects(objects(t, secret("checkout-dev", "dev-fixture", "stringData: {password: "+secretValue+"}\n")), allow, "dev")
	if len(res.Exceptions) != 1 || res.Exceptions[0].Secret != "dev-fixture" || res.Exceptions[0].Object != "Secret checkout-dev/dev-fixture" ||
		res.Exceptions[0].Field != "stringData" || res.Exceptions[0].Image != "" {
		t.Errorf("the allowed Secret is not declared as an exception: %+v", res.Exceptions)
	}
}

// TestAllowListEnvironments: an image exception scoped to dev lets the
// image through in dev only; an unscoped one holds everywhere; a render
// that names no environment gets only the unscoped ones.
func TestAllowListEnvironments(t *testing.T) {
	t.Parallel()
	allow, err := policy.ParseAllowList([]byte(secretAllowList), policy.AllowListFile)
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - {name: a, image: "r.example.test/vendor/debug-agent:3.1"}
    - {name: b, image: "r.example.test/vendor/everywhere:1"}
`)
	for env, want := range map[string][]string{
		"dev":        nil,
		"production": {"r.example.test/vendor/debug-agent:3.1"},
		"":           {"r.example.test/vendor/debug-agent:3.1"},
	} {
		var got []string
		for _, v := range policy.CheckObjects(objs, allow, env).Violations {
			got = append(got, v.Value)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("environment %q: refused %q, want %q", env, got, want)
		}
		d := policy.DecideImage("r.example.test/vendor/debug-agent:3.1", allow, env)
		if d.Refused() != (len(want) > 0) {
			t.Errorf("environment %q: DecideImage refused=%v, CheckObjects refused %q", env, d.Refused(), got)
		}
	}
	if got := policy.Environment("", "apps/checkout/overlays/dev"); got != "dev" {
		t.Errorf("Environment of an overlay: %q", got)
	}
	if got := policy.Environment("qa", "apps/checkout/overlays/dev"); got != "qa" {
		t.Errorf("an explicit environment: %q", got)
	}
	if got := policy.Environment("", "apps/checkout/base"); got != "" {
		t.Errorf("Environment of a base: %q", got)
	}
}

// TestAllowListBadInput: every malformed entry is an error naming the file
// and the field.
func TestAllowListBadInput(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: throughline.dev/v1alpha1\nkind: AllowList\n"
	for _, tc := range []struct{ name, doc, field string }{
		{"unknown image key", "images: [{pattern: x, reason: y, env: [dev]}]\n", "unknown field"},
		{"environment twice", "images: [{pattern: x, environments: [dev, dev], reason: y}]\n", "images[0].environments[1] \"dev\": named twice"},
		{"empty environment", "images: [{pattern: x, environments: [''], reason: y}]\n", "images[0].environments[0]: empty"},
		{"empty environments", "images: [{pattern: x, environments: [], reason: y}]\n", "images[0].environments: empty list"},
		{"pattern environment", "images: [{pattern: x, environments: ['prod*'], reason: y}]\n", "images[0].environments[0] \"prod*\""},
		{"empty image reason", "images: [{pattern: x, environments: [dev], reason: ' '}]\n", "images[0].reason"},
		{"unknown secret key", "images: []\nsecrets: [{name: s, environments: [dev], reason: y, value: z}]\n", "unknown field"},
		{"secret without name", "images: []\nsecrets: [{environments: [dev], reason: y}]\n", "secrets[0].name"},
		{"secret without environments", "images: []\nsecrets: [{name: s, reason: y}]\n", "secrets[0].environments: required"},
		{"secret environment twice", "images: []\nsecrets: [{name: s, environments: [dev, qa, dev], reason: y}]\n", "secrets[0].environments[2] \"dev\": named twice"},
		{"secret without reason", "images: []\nsecrets: [{name: s, environments: [dev]}]\n", "secrets[0].reason"},
	} {
		_, err := policy.ParseAllowList([]byte(head+tc.doc), policy.AllowListFile)
		if err == nil || !strings.Contains(err.Error(), policy.AllowListFile) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want an error naming %s and %q", tc.name, err, policy.AllowListFile, tc.field)
		}
	}
}
