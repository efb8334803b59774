//go:build e2e

package webview

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/forge"
)

// TestWebViewPullRequests (issue 37, "PRs when --forge is configured"):
// in Chromium, the served grid and the app's pipeline show the attempt
// waiting for approvals with its pull request (number linking to the
// forge, open, the forge's approvals), its title's markup as text; a fork
// whose branch has the attempt's name is in no cell but listed apart with
// why it is no attempt's; a forge that hangs
// leaves the grid rendered and the cell saying the list is unavailable.
func TestWebViewPullRequests(t *testing.T) {
	ctx := browser(t)
	f := chainfixture.New(t, example)
	branch := f.AwaitApprovals()
	hang := make(chan struct{})
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/hang/"):
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		case strings.HasSuffix(r.URL.Path, "/reviews"):
			_, _ = io.WriteString(w, `[{"user":{"login":"alice"},"state":"APPROVED"}]`)
		default:
			_, _ = io.WriteString(w, `[{"number":1348,"html_url":"https://github.example/platform/gitops-env/pull/1348","title":"fork","draft":false,`+
				`"head":{"ref":"`+branch+`","repo":{"full_name":"mallory/gitops-env"}},"base":{"ref":"main"}},`+
				`{"number":1347,"html_url":"https://github.example/platform/gitops-env/pull/1347","title":"<script>document.title='owned'</script>promote api",`+
				`"draft":false,"head":{"ref":"`+branch+`","repo":{"full_name":"platform/gitops-env"}},"base":{"ref":"main"}}]`)
		}
	}))
	defer gh.Close()
	defer close(hang)
	client := func(base string) *forge.Client {
		return &forge.Client{Kind: forge.GitHub, BaseURL: base, Repo: "platform/gitops-env", Token: "tok-E2E", HTTP: gh.Client()}
	}
	base := serveHandler(t, &chainview.Handler{Repo: f.Repo, Pulls: chainview.ForgeLister(client(gh.URL)), Forge: "github"})
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("grid: %v", err)
	}
	grid := text(t, ctx, "table.grid")
	want := "in flight on " + branch + ": VERIFIED 1.0.0 sha256:9d9d9d9d9d9d, waits on approvals: 1 of 2; PR #1347 (open, 1 approval on the forge): " +
		"<script>document.title='owned'</script>promote api"
	if !strings.Contains(grid, want) {
		t.Errorf("grid: no %q in the visible text:\n%s", want, grid)
	}
	if strings.Contains(grid, "1348") {
		t.Errorf("the fork's request is shown in a cell:\n%s", grid)
	}
	// It is listed apart, open, saying why it is no attempt's.
	others := text(t, ctx, "details.other-pulls")
	for _, want := range []string{"1 other open pull request, attached to no attempt in flight (1 named like an attempt branch)", "PR #1348", branch + " into main (another repository)",
		"from another repository: its branch is named like an attempt branch"} {
		if !strings.Contains(others, want) {
			t.Errorf("the other requests: no %q in the visible text:\n%s", want, others)
		}
	}
	if href := attr(t, ctx, "table.grid .pull a", "href"); href != "https://github.example/platform/gitops-env/pull/1347" {
		t.Errorf("the request links to %q", href)
	}
	if n := count(t, ctx, "script"); n != 0 {
		t.Errorf("%d script elements on the page", n)
	}
	if title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`)); err != nil || title == "owned" {
		t.Errorf("the title's script ran: %q %v", title, err)
	}
	a11y(t, ctx, "the grid with a pull request")
	screenshot(t, ctx, "grid-pull-request.png", false)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/app/api.html")); err != nil {
		t.Fatalf("app page: %v", err)
	}
	if pipe := text(t, ctx, "ol.pipeline"); !strings.Contains(pipe, "PR #1347 (open, 1 approval on the forge)") {
		t.Errorf("pipeline: no request in the visible text:\n%s", pipe)
	}

	hanging := serveHandler(t, &chainview.Handler{Repo: f.Repo, Pulls: chainview.ForgeLister(client(gh.URL + "/hang")), Forge: "github",
		PullsTimeout: time.Second})
	if err := chromedp.Do(ctx, chromedp.Navigate(hanging+"/")); err != nil {
		t.Fatalf("grid with a hanging forge: %v", err)
	}
	grid = text(t, ctx, "table.grid")
	for _, want := range []string{"waits on approvals: 1 of 2", "pull request list unavailable: the forge did not answer within 1s",
		"cart no record no record ACCEPTED 1.0.0"} {
		if !strings.Contains(grid, want) {
			t.Errorf("grid with a hanging forge: no %q in the visible text:\n%s", want, grid)
		}
	}
}
