// Package golden compares test output with files under testdata/, the one
// way the project's tests keep golden files: THROUGHLINE_UPDATE_GOLDEN=1
// rewrites them (ErrorLines: a table's error messages, tested once). For tests
// only; it imports nothing but the standard library.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// UpdateEnv is the variable that rewrites golden files instead of comparing.
const UpdateEnv = "THROUGHLINE_UPDATE_GOLDEN"

// Compare fails t when got differs from the file (a slash path, relative to
// the test's package directory); with UpdateEnv set it writes got first.
func Compare(t testing.TB, file string, got []byte) {
	t.Helper()
	file = filepath.FromSlash(file)
	if os.Getenv(UpdateEnv) != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (%s=1 writes it)", err, UpdateEnv)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("differs from %s (%s=1 rewrites it):\ngot:\n%s\nwant:\n%s", file, UpdateEnv, got, want)
	}
}
