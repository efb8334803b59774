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

// failsFor resolves every chart but one, which its source refuses.
type failsFor struct {
	resolvedAs
	name string
}

func (f failsFor) Resolve(ctx context.Context, ref chartsource.Ref) (*chartsource.Resolved, error) {
	if ref.Name == f.name {
		return nil, errors.New("the source answers 404 for " + ref.Name)
	}
	return f.resolvedAs.Resolve(ctx, ref)
}

// TestPinLocksWritesAllOrNothing pins two directories where the second
// cannot be pinned (its chart is not resolved, or its lock file does not
// parse): the first directory's lock file must not have been written
// either (before, the lock files were written directory by directory, so
// the first was pinned and the second not).
func TestPinLocksWritesAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		res     chartsource.Resolver
		badLock string
		want    string
	}{
		{"a chart the source refuses", failsFor{resolvedAs("sha256:" + strings.Repeat("a", 64)), "db"}, "", "404 for db"},
		{"a lock file that does not parse", resolvedAs("sha256:" + strings.Repeat("a", 64)), "charts: {", "b/" + chartsource.LockFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for _, d := range []string{"a", "b"} {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tc.badLock != "" {
				if err := os.WriteFile(filepath.Join(root, "b", chartsource.LockFile), []byte(tc.badLock), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fsys, err := render.NewConfinedFS(root, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			use := func(dir, name string) chartsource.Use {
				return chartsource.Use{File: dir + "/kustomization.yaml", Field: "helmCharts[0]", Dir: dir,
					Ref: chartsource.Ref{Repo: "oci://registry.example/charts", Name: name, Version: "1.2.3"}}
			}
			byDir := map[string][]chartsource.Use{"a": {use("a", "web")}, "b": {use("b", "db")}}
			changes, err := chartsource.PinLocks(context.Background(), fsys, byDir, tc.res)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error saying %q", err, tc.want)
			}
			if len(changes) != 0 {
				t.Errorf("changes %q reported, nothing should be written", changes)
			}
			if _, err := os.Lstat(filepath.Join(root, "a", chartsource.LockFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a's lock file was written though b could not be pinned (%v)", err)
			}
		})
	}
}
