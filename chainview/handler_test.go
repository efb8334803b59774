package chainview

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/promotion"
)

// TestHandler: GET and HEAD of every page, nothing that changes state
// (405), unknown pages 404, and a policy that allows no script.
func TestHandler(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	srv := httptest.NewServer(&Handler{Repo: f.Repo})
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/", 200, "Apps and environments"},
		{"GET", "/index.html", 200, `href="promotion/checkout-production-4b7e2a91c3d5-1.html"`},
		{"HEAD", "/index.html", 200, ""},
		{"GET", "/promotion/web-production-e0e0e0e0e0e0-1.html", 200, "production runtime evidence"},
		{"GET", "/app/cart.html", 200, "rollback --to previous"},
		{"GET", "/style.css", 200, "font"},
		{"GET", "/promotion/nope.html", 404, ""},
		{"GET", "/app/../index.html", 404, ""},
		{"GET", "/app/UPPER.html", 404, ""},
		{"POST", "/index.html", 405, ""},
		{"PUT", "/promotion/web-production-e0e0e0e0e0e0-1.html", 405, ""},
		{"DELETE", "/", 405, ""},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		must(t, err)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s: %d, want %d with %q:\n%.300s", tc.method, tc.path, resp.StatusCode, tc.code, tc.want, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script") {
			t.Errorf("%s %s: Content-Security-Policy %q", tc.method, tc.path, csp)
		}
		if tc.code == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, resp.Header.Get("Allow"))
		}
	}
}

// TestHandlerSeesAttemptBranches: an approval pushed to an attempt branch
// (the base branch unmoved) shows in the served grid after the TTL.
func TestHandlerSeesAttemptBranches(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	srv := httptest.NewServer(&Handler{Repo: f.Repo, TTL: time.Nanosecond})
	defer srv.Close()
	grid := func() string { return getPage(t, srv.URL+"/") }
	if strings.Contains(grid(), `class="flight"`) {
		t.Fatal("in flight before any attempt branch")
	}
	rec := verifiedRecord(t, f, "production", "alice@example.com")
	branch := promotion.AttemptKey{App: "api", Digest: apiDigest, Environment: "production", Attempt: 1}.Branch()
	f.Git("checkout", "-q", "-b", branch)
	data, err := rec.Marshal()
	must(t, err)
	f.Commit("api VERIFIED in production, approved by alice", map[string][]byte{promotion.RecordPath("api", "production"): data})
	f.Git("checkout", "-q", "main")
	time.Sleep(time.Millisecond)
	if g := grid(); !strings.Contains(g, "waits on approvals: 1 of 2") {
		t.Fatalf("the served grid does not show the attempt pushed to %s", branch)
	}
}

// getPage is the body of a GET of url.
func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(body)
}
