package cmp_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// TestGenerateNeverEchoesSecretValues: what cmp generate prints on failure
// is the ComparisonError every viewer of the app sees in Argo CD. Hostile
// Secrets next to a policy violation, with a duplicated key, or in a name
// clash must not put a value into it.
func TestGenerateNeverEchoesSecretValues(t *testing.T) {
	t.Parallel()
	v := func(n int) string { return fmt.Sprintf("hunter2-plaintext-%d", n) }
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: " + v(1) + "\n"
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: \"nginx:latest\"}]}\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		code  int
	}{
		{"policy violation on a Pod next to the Secret", map[string]string{
			"apps/web/overlays/staging/kustomization.yaml": "resources: [all.yaml]\n",
			"apps/web/overlays/staging/all.yaml":           secret + "---\n" + pod,
		}, exitcode.Refused},
		{"policy violation in a plain directory next to the Secret", map[string]string{
			"apps/web/overlays/staging/all.yaml": secret + "---\n" + pod,
		}, exitcode.Refused},
		{"duplicated stringData key", map[string]string{
			"apps/web/overlays/staging/kustomization.yaml": "resources: [s.yaml]\n",
			"apps/web/overlays/staging/s.yaml":             secret + "  password: " + v(2) + "\n",
		}, exitcode.Invalid},
		{"duplicated data key in a plain directory", map[string]string{
			"apps/web/overlays/staging/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  a: " +
				base64.StdEncoding.EncodeToString([]byte(v(3))) + "\n  a: " + base64.StdEncoding.EncodeToString([]byte(v(4))) + "\n",
		}, exitcode.Invalid},
		{"secretGenerator clashes with a Secret", map[string]string{
			"apps/web/overlays/staging/kustomization.yaml": "resources: [s.yaml]\ngeneratorOptions: {disableNameSuffixHash: true}\n" +
				"secretGenerator: [{name: s, literals: [password=" + v(5) + "]}]\n",
			"apps/web/overlays/staging/s.yaml": secret,
		}, exitcode.Invalid},
		{"invalid base64 in data", map[string]string{
			"apps/web/overlays/staging/kustomization.yaml": "resources: [s.yaml, pod.yaml]\n",
			"apps/web/overlays/staging/s.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: \"" + v(6) + "!!\"}\n",
			"apps/web/overlays/staging/pod.yaml":           pod,
		}, exitcode.Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := writeRepo(t, tc.files)
			_, err := generateApp(t, root, "0123456789abcdef0123456789abcdef01234567", nil)
			if err == nil {
				t.Fatal("generated without error")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if got := exitcode.Code(err); got != tc.code {
				t.Errorf("exit code %d, want %d", got, tc.code)
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("the error holds a Secret value")
			}
			for n := range 10 {
				if strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte(v(n)))) {
					t.Errorf("the error holds the base64 of %s", v(n))
				}
			}
		})
	}
}
