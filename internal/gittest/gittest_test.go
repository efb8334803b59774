package gittest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRepository(t *testing.T) {
	t.Parallel()
	dir, first := New(t, map[string]string{"a/b.yaml": "x: 1\n"})
	Replace(t, dir, "a/b.yaml", "1", "2")
	second := Commit(t, dir, "second", nil)
	if first == second || len(second) != 40 {
		t.Fatalf("commits %s then %s", first, second)
	}
	if got := Run(t, dir, "show", first+":a/b.yaml"); got != "x: 1" {
		t.Fatalf("first commit holds %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b.yaml")); err != nil || string(b) != "x: 2\n" {
		t.Fatalf("work tree holds %q, %v", b, err)
	}
	if got := Run(t, dir, "log", "-1", "--format=%an <%ae>"); got != "t <t@example.invalid>" {
		t.Fatalf("author %q", got)
	}
}
