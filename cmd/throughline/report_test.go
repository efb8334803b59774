package main

import (
	"io"
	"net/http"
	"net/http/httptest"
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

// TestReportForge: with --forge, the attempt in flight shows its pull
// request; a forge answering 500 (echoing the token) leaves the pages
// written, the cell saying the list is unavailable, and the token in no
// page, no output and no log line.
func TestReportForge(t *testing.T) {
	const token = "tok-REPORT-7c2e"
	t.Setenv("THROUGHLINE_FORGE_TOKEN", token)
	f := chainfixture.New(t, exampleRepo)
	branch := f.AwaitApprovals()
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case fail:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"message":"`+r.Header.Get("Authorization")+`"}`)
		case strings.HasSuffix(r.URL.Path, "/reviews"):
			_, _ = io.WriteString(w, `[]`)
		default:
			_, _ = io.WriteString(w, `[{"number":42,"html_url":"https://github.example/platform/gitops-env/pull/42","title":"promote api","draft":true,`+
				`"head":{"ref":"`+branch+`","repo":{"full_name":"platform/gitops-env"}},"base":{"ref":"main"}}]`)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		fail bool
		want string
	}{
		{false, `<a href="https://github.example/platform/gitops-env/pull/42">PR #42</a> (draft, 0 approvals on the forge), waits on being marked ready`},
		{true, "pull request list unavailable: the forge answered HTTP 500"},
	} {
		fail = tc.fail
		out := filepath.Join(t.TempDir(), "site")
		res := runCLI(t, "report", "--repo", f.Dir, "--out", out, "--forge", "github", "--forge-url", srv.URL, "--forge-repo", "platform/gitops-env")
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		for _, p := range []string{"index.html", "app/api.html"} {
			data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p)))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tc.want) {
				t.Errorf("%s does not say %q", p, tc.want)
			}
			if strings.Contains(string(data), token) {
				t.Errorf("%s shows the token", p)
			}
		}
		if strings.Contains(res.stdout+res.stderr, token) {
			t.Errorf("the output shows the token:\n%s\n%s", res.stdout, res.stderr)
		}
		if tc.fail && !strings.Contains(res.stderr, "pull request list is unavailable") {
			t.Errorf("the failure is not logged: %s", res.stderr)
		}
	}
}
