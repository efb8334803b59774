package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// RemoveRuntimeChecks deletes every runtime checks file
// (throughline-checks.yaml) under dir, a copy of examples/gitops-env. The
// example declares Prometheus queries and HTTP probes that only a running
// app and a Prometheus can pass; a suite that runs neither (the reconcilers'
// suites: their subject is the chain up to the imageID match) removes them,
// so that its Acceptances are judged by their images alone. Runtime checks
// are e2e/runtimechecks' subject, against a real Prometheus.
func RemoveRuntimeChecks(t testing.TB, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "throughline-checks.yaml" {
			return err
		}
		return os.Remove(p)
	})
	if err != nil {
		t.Fatalf("removing the runtime checks of %s: %v", dir, err)
	}
}
