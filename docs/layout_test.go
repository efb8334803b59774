// Package docs holds the guides; its test keeps the README's layout table
// true to the tree.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLayoutTable: every Go package of the module (outside e2e/ and
// hack/, which have their own row) is named in the README's layout table,
// and every directory the table names exists, so a newcomer finds where a
// thing lives from the table and the folder names alone.
func TestLayoutTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(readme), "| package | what it provides |")
	if start < 0 {
		t.Fatal("README.md: no layout table (| package | what it provides |)")
	}
	var table []string
	for _, l := range strings.Split(string(readme)[start:], "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		table = append(table, l)
	}
	named := map[string]bool{}
	tick := regexp.MustCompile("`([a-z0-9][a-z0-9_./-]*)/?`")
	for _, row := range table {
		for _, m := range tick.FindAllStringSubmatch(row, -1) {
			named[strings.TrimSuffix(m[1], "/")] = true
		}
	}
	for _, row := range table[2:] {
		key := tick.FindStringSubmatch(row)
		if key == nil {
			t.Errorf("README.md layout row names no directory: %s", row)
			continue
		}
		if fi, err := os.Stat(filepath.Join("..", strings.TrimSuffix(key[1], "/"))); err != nil || !fi.IsDir() {
			t.Errorf("README.md layout row %q: no such directory", key[1])
		}
	}
	out, err := exec.CommandContext(t.Context(), "go", "list", "-f", "{{.Dir}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if rel == "docs" || strings.HasPrefix(rel, "e2e/") || strings.HasPrefix(rel, "hack/") {
			continue
		}
		if !named[rel] {
			t.Errorf("package %s/ is not in README.md's layout table", rel)
		}
	}
}
