package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretValueCopiedByReplacements: kustomize replacements copy a
// Secret's value into a container image, a label and an annotation (the
// overlay then deletes the Secret); generate refuses the unpinned image
// (exit 3) and neither stdout nor stderr shows the value.
func TestSecretValueCopiedByReplacements(t *testing.T) {
	const value = "copied-s3cr3t-value"
	repo := t.TempDir()
	for name, body := range map[string]string{
		"apps/web/base/kustomization.yaml": "resources: [secret.yaml, deploy.yaml]\nreplacements:\n" +
			"  - source: {kind: Secret, name: db, fieldPath: stringData.password}\n    targets:\n" +
			"      - select: {kind: Deployment}\n" +
			"        fieldPaths: [spec.template.spec.containers.0.image, metadata.labels.leak, metadata.annotations.leak]\n",
		"apps/web/base/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + value + "}\n",
		"apps/web/base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {leak: x}, annotations: {leak: x}}\n" +
			"spec:\n  template:\n    spec:\n      containers: [{name: web, image: placeholder}]\n",
		"apps/web/overlays/staging/kustomization.yaml": "resources: [../../base]\npatches:\n" +
			"  - patch: |\n      $patch: delete\n      apiVersion: v1\n      kind: Secret\n      metadata: {name: db}\n",
	} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, app := range []string{"apps/web/base", "apps/web/overlays/staging"} {
		t.Run(app, func(t *testing.T) {
			cmd := exec.Command(binary(t), "generate", "--no-cache", "--log-level", "error")
			cmd.Dir = filepath.Join(repo, filepath.FromSlash(app))
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "ARGOCD_APP_NAME=web", "ARGOCD_APP_NAMESPACE=web",
				"ARGOCD_APP_SOURCE_PATH="+app, "ARGOCD_APP_REVISION=0123456789abcdef")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr.String(), "unpinned-image") {
				t.Fatalf("generate: %v, want exit 3 (unpinned-image)\n%s", err, stderr.String())
			}
			if out := stdout.String() + stderr.String(); strings.Contains(out, value) || strings.Contains(out, "s3cr3t") {
				t.Errorf("generate shows the Secret value:\n%s", out)
			}
		})
	}
}
