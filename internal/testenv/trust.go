package testenv

import (
	"os"
	"path/filepath"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// RemoveTrust deletes the trust policy (environments.*.trust) of the
// throughline-policy.yaml in dir, a copy of examples/gitops-env. The
// example requires supply-chain evidence of every image promoted into
// staging and production, and every gate re-verifies it; a test whose
// artifacts are made-up digests without evidence in any registry (its
// subject is another gate) removes it. Supply-chain evidence is the subject
// of trust/, promote's trust gates and e2e/supplychain, against a real
// registry.
func RemoveTrust(t testing.TB, dir string) {
	t.Helper()
	file := filepath.Join(dir, "throughline-policy.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("removing the trust policy of %s: %v", dir, err)
	}
	out, err := WithoutTrust(data)
	if err != nil {
		t.Fatalf("removing the trust policy of %s: %v", file, err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatalf("removing the trust policy of %s: %v", file, err)
	}
}

// WithoutTrust is the policy file data without environments.*.trust
// (comments and the rest kept).
func WithoutTrust(data []byte) ([]byte, error) {
	doc, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	envs, err := doc.Pipe(kyaml.Lookup("environments"))
	if err != nil || envs == nil {
		return data, err
	}
	err = envs.VisitFields(func(env *kyaml.MapNode) error {
		_, err := env.Value.Pipe(kyaml.Clear("trust"))
		return err
	})
	if err != nil {
		return nil, err
	}
	s, err := doc.String()
	return []byte(s), err
}
