package policy_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/policy"
)

// TestViolationsNeverShowSecretValues: a Secret value copied (as kustomize
// replacements do) into an image, an object's name or namespace, a label
// and an annotation of the same render is redacted from every violation
// (rule, object, field, value, reason) and from the refusal's message, as
// render's errors are; whether the Secret carries it in stringData or
// base64 in data.
func TestViolationsNeverShowSecretValues(t *testing.T) {
	t.Parallel()
	const value = "s3cr3t-from-a-Secret"
	for _, tc := range []struct{ name, secret string }{
		{"stringData", "stringData: {password: " + value + "}\n"},
		{"data", "data: {password: " + base64.StdEncoding.EncodeToString([]byte(value)) + "}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: shop}\n" + tc.secret + "---\n" +
				"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web-" + value + ", namespace: shop,\n" +
				"  labels: {leak: " + value + "}, annotations: {leak: " + value + "}}\n" +
				"spec:\n  template:\n    spec:\n      containers:\n" +
				"        - {name: a, image: \"registry.example.test/" + value + ":1\"}\n" +
				"        - {name: b, image: \"registry.example.test/app:" + value + "\"}\n" +
				"        - {name: c, image: \"" + value + "\"}\n" +
				"---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web-" + value + ", namespace: shop}\n"
			res := policy.CheckObjects(objects(t, docs), nil, "production")
			rules := map[policy.Rule]int{}
			for _, v := range res.Violations {
				rules[v.Rule]++
				for _, s := range []string{v.File, v.Object, v.Field, v.Value, v.Reason, v.String()} {
					if strings.Contains(s, value) || strings.Contains(s, "s3cr3t") {
						t.Errorf("violation %s shows the value: %q", v.Rule, s)
					}
				}
			}
			if rules[policy.RuleUnpinnedImage] != 3 || rules[policy.RuleDuplicateObject] != 1 || rules[policy.RuleSecretPlaintext] != 1 {
				t.Errorf("violations %v, want 3 unpinned-image, 1 duplicate-object, 1 secret-plaintext", rules)
			}
			if msg := res.Err().Error(); strings.Contains(msg, value) || !strings.Contains(msg, "<redacted>") {
				t.Errorf("the refusal's message shows the value, or does not say it hid one:\n%s", msg)
			}
		})
	}
}
