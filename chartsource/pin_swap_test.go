package chartsource_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/render"
)

// resolvedAs answers every chart with one digest: the lock edit is what is
// tested here, not the source (pin's end to end with a real registry is
// cmd/throughline's TestPinCharts*).
type resolvedAs string

func (d resolvedAs) Resolve(_ context.Context, ref chartsource.Ref) (*chartsource.Resolved, error) {
	return &chartsource.Resolved{Ref: ref, Kind: chartsource.KindOCI, Digest: string(d), Package: string(d)}, nil
}

// TestPinLocksReadsConfined points the app's lock file out of the
// repository (a link) and into .git: PinLocks refuses to read it, and
// leaves the link alone (before, it read the target with os.ReadFile and
// wrote it back, with the new pin, over the link inside the repository).
func TestPinLocksReadsConfined(t *testing.T) {
	t.Parallel()
	const secret = "OUTSIDE-THE-REPOSITORY"
	lock := "apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\n# " + secret + "\ncharts: []\n"
	for _, tc := range []struct {
		name   string
		target func(t *testing.T, root string) string
		want   error
	}{
		{"a link out of the repository", func(t *testing.T, _ string) string {
			return filepath.Join(t.TempDir(), chartsource.LockFile)
		}, render.ErrOutsideRoot},
		{"a link into .git", func(t *testing.T, root string) string {
			return filepath.Join(root, ".git", chartsource.LockFile)
		}, render.ErrGitDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			target := tc.target(t, root)
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, []byte(lock), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(root, "app", chartsource.LockFile)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			fsys, err := render.NewConfinedFS(root, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			use := chartsource.Use{File: "app/kustomization.yaml", Field: "helmCharts[0]", Dir: "app",
				Ref: chartsource.Ref{Repo: "oci://registry.example/charts", Name: "web", Version: "1.2.3"}}
			changes, err := chartsource.PinLocks(context.Background(), fsys, map[string][]chartsource.Use{"app": {use}},
				resolvedAs("sha256:"+strings.Repeat("a", 64)))
			if !errors.Is(err, tc.want) || len(changes) != 0 {
				t.Fatalf("got %v, %v; want %v", changes, err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the refusal shows the file: %v", err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v %v", fi, err)
			}
		})
	}
}
