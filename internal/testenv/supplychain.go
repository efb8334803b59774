package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ExampleImage is the example's artifact repository (examples/gitops-env).
const ExampleImage = "ghcr.io/throughline-dev/checkout"

// CopyExampleFor copies examples/gitops-env to dst with its artifact moved
// to host's registry (every mention of ExampleImage becomes
// host/throughline-dev/checkout: the bases, the overlays, the records) and
// its runtime checks removed (no app serves and no Prometheus runs), for a
// suite whose images are real, pushed to a real registry at host.
func CopyExampleFor(t testing.TB, dst, host string) {
	t.Helper()
	src := filepath.Join(RepoRoot(t), "examples", "gitops-env")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying the example: %v", err)
	}
	RemoveRuntimeChecks(t, dst)
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), ExampleImage) {
			return err
		}
		return os.WriteFile(p, []byte(strings.ReplaceAll(string(data), ExampleImage, host+"/throughline-dev/checkout")), 0o644)
	})
	if err != nil {
		t.Fatalf("moving the example's artifact to %s: %v", host, err)
	}
}
