package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultCacheDir: the render cache lives in the user's cache directory,
// never in a predictable path under the shared temporary directory.
func TestDefaultCacheDir(t *testing.T) {
	t.Setenv(EnvCacheDir, "")
	t.Setenv("XDG_CACHE_HOME", "/home/u/.cache")
	if got := DefaultCacheDir(); got != filepath.Join("/home/u/.cache", "throughline", "render") {
		t.Errorf("with XDG_CACHE_HOME: %q", got)
	}
	t.Setenv(EnvCacheDir, "/var/cache/tl")
	if got := DefaultCacheDir(); got != "/var/cache/tl" {
		t.Errorf("with %s: %q", EnvCacheDir, got)
	}
	t.Setenv(EnvCacheDir, "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if got := DefaultCacheDir(); got != "" || strings.HasPrefix(got, os.TempDir()) {
		t.Errorf("without a user cache directory: %q, want none (render uncached)", got)
	}
}
