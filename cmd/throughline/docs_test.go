package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// cliDocsDir is the generated CLI reference, relative to the repository root.
const cliDocsDir = "docs/cli"

// genCLIDocs writes the Markdown reference of every command into dir. The
// output is the same on every machine: DisableAutoGenTag on every command
// drops the date, and defaults under the user's cache directory are written
// as $XDG_CACHE_HOME (the caller clears THROUGHLINE_CACHE_DIR).
func genCLIDocs(dir string) error {
	root := newRootCommand(&globals{}, io.Discard, io.Discard)
	cache, cacheErr := os.UserCacheDir()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if cacheErr == nil && strings.HasPrefix(f.DefValue, cache+string(filepath.Separator)) {
					f.DefValue = "$XDG_CACHE_HOME" + filepath.ToSlash(strings.TrimPrefix(f.DefValue, cache))
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return doc.GenMarkdownTree(root, dir)
}

// TestCLIDocs: docs/cli is what cobra generates from the current commands.
// THROUGHLINE_UPDATE_DOCS=1 (make docs) rewrites it instead.
func TestCLIDocs(t *testing.T) {
	t.Setenv(EnvCacheDir, "")
	want := filepath.Join(repoRoot, cliDocsDir)
	if os.Getenv("THROUGHLINE_UPDATE_DOCS") == "1" {
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(want, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := genCLIDocs(want); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := t.TempDir()
	if err := genCLIDocs(got); err != nil {
		t.Fatal(err)
	}
	gotFiles, wantFiles := mdFiles(t, got), mdFiles(t, want)
	if !slices.Equal(gotFiles, wantFiles) {
		t.Fatalf("%s is stale: run make docs\n generated: %v\n committed: %v", cliDocsDir, gotFiles, wantFiles)
	}
	for _, name := range gotFiles {
		g, err := os.ReadFile(filepath.Join(got, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(want, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("%s/%s is stale: run make docs", cliDocsDir, name)
		}
	}
}

func mdFiles(t *testing.T, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = filepath.Base(m)
	}
	slices.Sort(names)
	return names
}
