package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/exitcode"
)

// TestReport: the pages of the story as static files with relative
// links, and the usage errors.
func TestReport(t *testing.T) {
	f := chainfixture.New(t, exampleRepo)
	out := filepath.Join(t.TempDir(), "site")
	res := runCLI(t, "report", "--log-level", "warn", "--repo", f.Dir, "--out", out, "--commit-url", "https://forge.example/gitops/commit/%s")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, "(6 promotions, 4 apps)") {
		t.Fatalf("stdout %q", res.stdout)
	}
	for _, p := range []string{"index.html", "style.css", "promotion/checkout-production-4b7e2a91c3d5-1.html", "app/cart.html"} {
		data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), `href="/`) {
			t.Errorf("%s has an absolute link", p)
		}
		if strings.HasPrefix(p, "promotion/") && !strings.Contains(string(data), `href="https://forge.example/gitops/commit/`) {
			t.Errorf("%s links no commit", p)
		}
	}
	for _, args := range [][]string{
		{"report", "--repo", f.Dir},
		{"report", "--repo", f.Dir, "--out", out, "--commit-url", "https://forge.example/%s/%d"},
	} {
		if res := runCLI(t, args...); res.code != int(exitcode.Usage) {
			t.Errorf("%v: exit %d, want %d: %s", args, res.code, exitcode.Usage, res.stderr)
		}
	}
}
