package render_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

// hostileSecrets are trees that fail to render because of (or next to) a
// Secret, one for every error path found: the values hunter2-plaintext-<n>
// must never appear in the error.
func hostileSecrets() []struct {
	name  string
	files map[string]string
	want  []string // in the error, besides the file
} {
	v := func(n int) string { return fmt.Sprintf("hunter2-plaintext-%d", n) }
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString([]byte(v(n))) }
	dupString := "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData:\n  password: " + v(1) +
		"\n  password: " + v(2) + "\n"
	dupData := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  token: " + b64(3) + "\n  token: " + b64(4) + "\n"
	secret := func(ns string, n int) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: %s}\nstringData: {password: %s}\n", ns, v(n))
	}
	return []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"plain: duplicated stringData key", map[string]string{"app/s.yaml": dupString},
			[]string{"app/s.yaml", "Secret ns/s", "stringData.password", "defined twice"}},
		{"plain: duplicated data key", map[string]string{"app/s.yaml": dupData},
			[]string{"app/s.yaml", "Secret s", "data.token", "defined twice"}},
		{"kustomize: duplicated stringData key", map[string]string{
			"app/kustomization.yaml": "resources: [s.yaml]\n", "app/s.yaml": dupString,
		}, []string{"app/kustomization.yaml", "stringData.password", "defined twice"}},
		{"kustomize: duplicated data key in a base", map[string]string{
			"app/kustomization.yaml": "resources: [../base]\n", "base/kustomization.yaml": "resources: [s.yaml]\n", "base/s.yaml": dupData,
		}, []string{"data.token", "defined twice"}},
		{"kustomize: secretGenerator literal clash", map[string]string{
			"app/kustomization.yaml": "secretGenerator:\n- name: g\n  literals: [password=" + v(5) + ", password=" + v(6) + "]\n",
		}, []string{"app/kustomization.yaml"}},
		{"kustomize: secretGenerator env clash", map[string]string{
			"app/kustomization.yaml": "secretGenerator: [{name: g, envs: [s.env]}]\n",
			"app/s.env":              "password=" + v(7) + "\npassword=" + v(8) + "\n",
		}, []string{"app/kustomization.yaml"}},
		{"kustomize: generated Secret clashes with a resource", map[string]string{
			"app/kustomization.yaml": "resources: [s.yaml]\ngeneratorOptions: {disableNameSuffixHash: true}\n" +
				"secretGenerator: [{name: s, namespace: ns, literals: [password=" + v(9) + "], files: [key=f.txt]}]\n",
			"app/s.yaml": secret("ns", 10), "app/f.txt": v(11),
		}, []string{"app/kustomization.yaml"}},
		{"kustomize: two Secrets with one identity", map[string]string{
			"app/kustomization.yaml": "resources: [a.yaml, b.yaml]\n", "app/a.yaml": secret("ns", 12), "app/b.yaml": secret("ns", 13),
		}, []string{"app/kustomization.yaml"}},
		{"kustomize: patch that fails on the Secret", map[string]string{
			"app/kustomization.yaml": "resources: [s.yaml]\npatches:\n- target: {kind: Secret}\n  patch: |-\n" +
				"    - {op: test, path: /stringData/password, value: wrong}\n",
			"app/s.yaml": secret("ns", 14),
		}, []string{"app/kustomization.yaml"}},
		{"kustomize: strategic merge patch of the wrong type", map[string]string{
			"app/kustomization.yaml": "resources: [s.yaml]\npatches: [{path: p.yaml}]\n",
			"app/s.yaml":             secret("ns", 15),
			"app/p.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: [" + v(16) + "]\n",
		}, []string{"app/kustomization.yaml"}},
		{"kustomize: ambiguous reference to two Secrets", map[string]string{
			"app/kustomization.yaml":  "namePrefix: a-\nresources: [s.yaml, ../base]\n",
			"app/s.yaml":              secret("default", 17),
			"base/kustomization.yaml": "namePrefix: pfx-\nresources: [s.yaml, pod.yaml]\n",
			"base/s.yaml":             secret("default", 18),
			"base/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: pod}\nspec:\n  containers: [{name: c, image: x}]\n" +
				"  volumes: [{name: v, secret: {secretName: s}}]\n",
		}, []string{"app/kustomization.yaml", "found multiple possible referrals"}},
		{"plain: YAML syntax error inside a Secret", map[string]string{
			"app/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: " + v(19) + "\n   other: " + v(20) + "\n",
		}, []string{"app/s.yaml"}},
		{"kustomize: YAML syntax error inside a Secret", map[string]string{
			"app/kustomization.yaml": "resources: [s.yaml]\n",
			"app/s.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: " + v(21) + "\n  other: [" + v(22) + "\n",
		}, []string{"app/kustomization.yaml"}},
		{"plain: Secret without a name", map[string]string{
			"app/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {namespace: ns}\nstringData: {password: " + v(23) + "}\n",
		}, []string{"app/s.yaml"}},
		{"plain: mapping key that is not a string in a Secret", map[string]string{
			"app/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {1: " + v(24) + "}\n",
		}, []string{"app/s.yaml"}},
	}
}

// TestSecretValuesNeverInErrors renders hostile Secrets through every error
// path found and searches the error for the values.
func TestSecretValuesNeverInErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileSecrets() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := writeTree(t, tc.files)
			ctx := context.Background()
			app, err := render.Open(ctx, render.Options{Root: root, Path: "app"})
			if err == nil {
				_, err = app.Build(ctx)
			}
			if err == nil {
				t.Fatal("rendered without error")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			assertNoSecret(t, msg)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not name %q", w)
				}
			}
		})
	}
}

// assertNoSecret fails when msg holds a hostile value, plain or base64.
func assertNoSecret(t *testing.T, msg string) {
	t.Helper()
	if strings.Contains(msg, "hunter2") {
		t.Errorf("the error holds a Secret value (hunter2...)")
	}
	for n := range 40 {
		v := fmt.Sprintf("hunter2-plaintext-%d", n)
		if b := base64.StdEncoding.EncodeToString([]byte(v)); strings.Contains(msg, b) {
			t.Errorf("the error holds the base64 of the Secret value %q", v)
		}
	}
}
