package policy_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
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
		{"an empty value", secret("checkout", "db", "stringData: {password: \"\"}\n"), "production", true, "stringData"},
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

// TestSOPSSecret: a v1 Secret wholly encrypted by SOPS (a sops: block with
// a MAC and a key, every value of data and stringData ENC[AES256_GCM,...])
// is a reference and passes; a partly encrypted one, ENC[...] values without
// a usable sops: block, or a lookalike value is refused, naming the plain
// keys and never a value.
func TestSOPSSecret(t *testing.T) {
	t.Parallel()
	allow, err := policy.ParseAllowList([]byte(secretAllowList), policy.AllowListFile)
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile("testdata/sops-secret.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sops := string(fixture)
	const (
		encPassword = "ENC[AES256_GCM,data:UE8ttIKKnMsOap08Cn7y5ZnCiA5c0gHAUDzpinh8ycSLyKtFPknG8w==,iv:/3HRWApSt+xqOnkrCBnNsu0YUvIK8+2uKWie21aoNSs=," +
			"tag:7LjJAG78BeFGopMBWm4zxA==,type:str]"
		encUsername = "ENC[AES256_GCM,data:vzBL7H/cLuCfUU3dGy4=,iv:rccbjOO+NmzNr1exHMaHR7S1AZ7AgNycJ83vNLpnMaY=,tag:csycZ2xddf+C8YwiPHJbjQ==,type:str]"
		mac         = "ENC[AES256_GCM,data:znzwoTJLJa+GlAJw,iv:tqVo0kb6dR9vqsaE6v1YosWdcj+RVNJASchfKf4Mdzs=,tag:tKat95slF4WyCAP8WobiuA==,type:str]"
	)
	for _, s := range []string{encPassword, encUsername, "mac: " + mac} {
		if !strings.Contains(sops, s) {
			t.Fatalf("the fixture lacks %q", s)
		}
	}
	// with returns the fixture with each old replaced by new.
	with := func(oldnew ...string) string { return strings.NewReplacer(oldnew...).Replace(sops) }
	sopsBlock := sops[strings.Index(sops, "sops:\n"):]
	noSOPS := strings.TrimSuffix(sops, sopsBlock)
	for _, tc := range []struct {
		name, doc string
		refused   bool
		field     string
		want      []string // in the reason
		notWant   []string // nowhere in the refusal
	}{
		{name: "wholly encrypted (encrypted_regex on data and stringData)", doc: sops},
		{name: "data only", doc: with("stringData:\n  username: "+encUsername+"\n", "")},
		{name: "key groups", doc: with("  age:\n    - recipient:", "  key_groups:\n    - age:\n        - recipient:",
			"      enc: |\n        -----BEGIN", "          enc: |\n            -----BEGIN",
			"        tActQ4", "            tActQ4", "        -----END", "            -----END")},
		{name: "an empty value (sops leaves it as it is)", doc: with("  username: "+encUsername, "  username: \"\"")},
		{name: "one plain value among encrypted ones", doc: with("  username: "+encUsername, "  username: "+secretValue),
			refused: true, field: "stringData",
			want:    []string{"partly SOPS-encrypted", "keys stringData.username are plain", "values not shown"},
			notWant: []string{"data.password"}},
		{name: "an unencrypted_suffix key", doc: with("  username: "+encUsername, "  username: "+encUsername+"\n  host_unencrypted: db.internal"),
			refused: true, field: "stringData", want: []string{"partly SOPS-encrypted", "keys stringData.host_unencrypted are plain"},
			notWant: []string{"data.password", "stringData.username", "db.internal"}},
		{name: "an ENC[ lookalike without the closing form", doc: with(encUsername, "ENC[AES256_GCM,data:"+secretValue),
			refused: true, field: "stringData", want: []string{"partly SOPS-encrypted", "stringData.username"}, notWant: []string{"data.password"}},
		{name: "an ENC[...] with text after it", doc: with(encUsername, encUsername+" "+secretValue),
			refused: true, field: "stringData", want: []string{"stringData.username"}},
		{name: "an ENC[...] of another cipher", doc: with("username: ENC[AES256_GCM,", "username: ENC[AES128_CBC,"),
			refused: true, field: "stringData", want: []string{"stringData.username"}},
		{name: "an ENC[...] whose data is not base64", doc: with("data:vzBL7H/cLuCfUU3dGy4=", "data:"+secretValue),
			refused: true, field: "stringData", want: []string{"stringData.username"}},
		{name: "an ENC[...] with a short iv", doc: with("iv:rccbjOO+NmzNr1exHMaHR7S1AZ7AgNycJ83vNLpnMaY=", "iv:cmNjYg=="),
			refused: true, field: "stringData", want: []string{"stringData.username"}},
		{name: "an ENC[...] of an unknown type", doc: with("csycZ2xddf+C8YwiPHJbjQ==,type:str]", "csycZ2xddf+C8YwiPHJbjQ==,type:secret]"),
			refused: true, field: "stringData", want: []string{"stringData.username"}},
		{name: "base64 of an ENC string in data", doc: with(encPassword, base64.StdEncoding.EncodeToString([]byte(encPassword))),
			refused: true, field: "data", want: []string{"partly SOPS-encrypted", "data.password"}, notWant: []string{"stringData.username"}},
		{name: "a non-string value", doc: with("  username: "+encUsername, "  username: 5432"),
			refused: true, field: "stringData", want: []string{"stringData.username"}},
		{name: "a nested value", doc: with("  username: "+encUsername, "  username: {inner: "+secretValue+"}"),
			refused: true, field: "stringData", want: []string{"stringData.username"}},
		{name: "data as one encrypted string", doc: with("data:\n  password: "+encPassword, "data: "+encPassword),
			refused: true, field: "data", want: []string{"partly SOPS-encrypted", "keys data are plain"}},
		{name: "ENC values without a sops: block", doc: noSOPS,
			refused: true, field: "data, stringData", want: []string{"no sops: block", "data.password, stringData.username"}},
		{name: "sops: not a mapping", doc: noSOPS + "sops: " + mac + "\n",
			refused: true, field: "data, stringData", want: []string{"sops: is not a mapping"}},
		{name: "sops: null", doc: noSOPS + "sops: null\n",
			refused: true, field: "data, stringData", want: []string{"sops: is not a mapping"}},
		{name: "sops: without mac", doc: with("  mac: "+mac+"\n", ""),
			refused: true, field: "data, stringData", want: []string{"sops.mac"}},
		{name: "sops: mac empty", doc: with("  mac: "+mac, "  mac: \"\""),
			refused: true, field: "data, stringData", want: []string{"sops.mac"}},
		{name: "sops: mac not ENC[...]", doc: with("  mac: "+mac, "  mac: 3f1c9a2e"),
			refused: true, field: "data, stringData", want: []string{"sops.mac"}},
		{name: "sops: no key", doc: with("  age:\n", "  age: []\n  unused:\n"),
			refused: true, field: "data, stringData", want: []string{"names no key"}},
		{name: "sops: a key without its encrypted data key", doc: with("      enc: |\n", "      unused: |\n"),
			refused: true, field: "data, stringData", want: []string{"names no key"}},
		{name: "sops: empty key groups", doc: with("  age:\n    - recipient:", "  key_groups: [{}]\n  unused:\n    - recipient:"),
			refused: true, field: "data, stringData", want: []string{"names no key"}},
		{name: "plain values beside a sops: block", doc: with(encPassword, "aHVudGVyMi1wbGFpbnRleHQ=", encUsername, secretValue),
			refused: true, field: "data, stringData", want: []string{"keys data.password, stringData.username are plain"}},
		{name: "a plain value and a sops: block without mac", doc: with("  mac: "+mac+"\n", "", encUsername, secretValue),
			refused: true, field: "data, stringData", want: []string{"sops.mac", "data.password, stringData.username"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := policy.CheckObjects(objects(t, tc.doc), allow, "production")
			if !tc.refused {
				if len(res.Violations) != 0 || len(res.Exceptions) != 0 {
					t.Fatalf("refused: %v (exceptions %+v)", res.Err(), res.Exceptions)
				}
				return
			}
			if len(res.Violations) != 1 {
				t.Fatalf("violations %+v, want one", res.Violations)
			}
			v := res.Violations[0]
			if v.Rule != policy.RuleSecretPlaintext || v.Field != tc.field || v.File != "app/manifests.yaml" ||
				v.Object != "Secret checkout-production/checkout-db" {
				t.Errorf("violation %+v, want rule %s field %q", v, policy.RuleSecretPlaintext, tc.field)
			}
			for _, w := range tc.want {
				if !strings.Contains(v.Reason, w) {
					t.Errorf("the reason lacks %q: %s", w, v.Reason)
				}
			}
			msg := res.Err().Error()
			for _, n := range append([]string{secretValue, "aHVudGVyMi", "vzBL7H", "UE8ttIK"}, tc.notWant...) {
				if strings.Contains(msg, n) {
					t.Errorf("the refusal shows %q: %s", n, msg)
				}
			}
			if v.Value != "" {
				t.Errorf("the violation has a value: %q", v.Value)
			}
		})
	}
	// The render's redaction still knows every value of a SOPS Secret: the
	// ENC[...] ones (no secret, but hiding them is harmless) and a plain one.
	red := render.NewRedactor(objects(t, with("  username: "+encUsername, "  username: "+secretValue)))
	if got := red.String("a " + encPassword + " b " + secretValue + " c"); got != "a "+render.Redacted+" b "+render.Redacted+" c" {
		t.Errorf("the redaction of a SOPS Secret's values: %q", got)
	}
	// The allow-list still holds for a partly encrypted Secret it names.
	dev := strings.NewReplacer("name: checkout-db", "name: dev-fixture", "namespace: checkout-production", "namespace: checkout-dev",
		"  username: "+encUsername, "  username: "+secretValue).Replace(sops)
	res := policy.CheckObjects(objects(t, dev), allow, "dev")
	if len(res.Violations) != 0 || len(res.Exceptions) != 1 || res.Exceptions[0].Secret != "dev-fixture" || res.Exceptions[0].Field != "stringData" {
		t.Errorf("the allowed Secret: violations %+v, exceptions %+v", res.Violations, res.Exceptions)
	}
}
