package chainview

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
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
