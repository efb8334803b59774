package chainview

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

// TestFilteredGrid: the served grid counts the cells by state at the
// top, anchors each row (id="app-<name>"), and filters by app,
// environment and state from the query string, without JavaScript; a
// filter that is not a name or a state is a 400, never a page.
func TestFilteredGrid(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	srv := httptest.NewServer(&Handler{Repo: f.Repo})
	defer srv.Close()
	get := func(q string) (int, string) {
		resp, err := http.Get(srv.URL + "/" + q)
		must(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		must(t, err)
		return resp.StatusCode, string(body)
	}
	rows := func(page string) []string {
		var out []string
		for _, part := range strings.Split(page, `<tr id="app-`)[1:] {
			out = append(out, part[:strings.Index(part, `"`)])
		}
		return out
	}
	code, all := get("")
	if code != 200 || strings.Join(rows(all), " ") != "cart checkout search web" {
		t.Fatalf("unfiltered: %d, rows %v", code, rows(all))
	}
	for _, want := range []string{`<a href="?state=ACCEPTED"><span class="state s-accepted">ACCEPTED</span> 5</a>`,
		`<a href="?state=HALTED"><span class="state s-halted">HALTED</span> 1</a>`, `<a href="?env=production">production</a>`} {
		if !strings.Contains(all, want) {
			t.Errorf("the grid has no %s", want)
		}
	}
	for _, tc := range []struct {
		query, rows string
		absent      string
	}{
		{"?state=HALTED", "web", ""},
		{"?app=cart", "cart", ""},
		{"?env=staging", "checkout search web", `<a href="?env=production">`},
		{"?env=staging&state=HALTED", "", ""},
		{"?state=IN-FLIGHT", "", ""},
	} {
		code, page := get(tc.query)
		if code != 200 || strings.Join(rows(page), " ") != tc.rows {
			t.Errorf("%s: %d, rows %v, want %q", tc.query, code, rows(page), tc.rows)
		}
		if !strings.Contains(page, "every app and environment") {
			t.Errorf("%s: no way back to the whole grid", tc.query)
		}
		if tc.absent != "" && strings.Contains(page, tc.absent) {
			t.Errorf("%s: the page shows %s", tc.query, tc.absent)
		}
	}
	for _, q := range []string{"?state=bogus", "?app=../etc", "?env=%3Cscript%3E", "?state=%3Cb%3E"} {
		if code, page := get(q); code != 400 || strings.Contains(page, "<b>") || strings.Contains(page, "<script") {
			t.Errorf("%s: %d %.200s, want 400", q, code, page)
		}
	}
}
