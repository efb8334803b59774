//go:build e2e

package webview

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/notifier"
)

var example = filepath.Join("..", "..", "examples", "gitops-env")

// The promotion pages the tests read.
const (
	accepted = "checkout-production-4b7e2a91c3d5-1"
	halted   = "web-production-e0e0e0e0e0e0-1"
)

// browser starts Debian's chromium, headless, in a browser context that
// lives as long as the test. A missing chromium skips, or fails in CI.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is not installed (apt-get install chromium): %v", err)
		}
		t.Skipf("chromium is not installed (apt-get install chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1360, 900)); err != nil {
		t.Fatalf("starting chromium %s: %v", bin, err)
	}
	return bctx
}

// serve runs the chain view of repo on a real listener on loopback, behind
// the server throughline serve --ui-bind-address builds.
func serve(t *testing.T, f *chainfixture.Repo) string {
	t.Helper()
	return serveHandler(t, &chainview.Handler{Repo: f.Repo, Options: chainview.Options{CommitURL: "https://forge.example/gitops/commit/%s"}})
}

// serveHandler runs h on a real listener on loopback, behind the server
// throughline serve --ui-bind-address builds.
func serveHandler(t *testing.T, h *chainview.Handler) string {
	t.Helper()
	srv := notifier.NewServer("127.0.0.1:0", h, time.Minute)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// text is the visible text (innerText) of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// screenshot saves the whole page as name in the test's artifacts (and,
// for the docs' images, in $THROUGHLINE_DOCS_IMAGES when set).
func screenshot(t *testing.T, ctx context.Context, name string, docs bool) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("THROUGHLINE_DOCS_IMAGES"); d != "" && docs {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s (%d bytes)", p, len(png))
	}
}

// TestWebViewServed: the grid, a link to the ACCEPTED production chain
// and its nine arrows as a reader sees them, the chain HALTED at the
// runtime evidence, the app page with what a rollback would pick.
func TestWebViewServed(t *testing.T) {
	ctx := browser(t)
	f := chainfixture.New(t, example)
	base := serve(t, f)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("grid: %v", err)
	}
	grid := text(t, ctx, "table.grid")
	for _, want := range []string{"app dev staging production", "checkout no record ACCEPTED 1.5.0 sha256:4b7e2a91c3d5",
		"HALTED 2.1.0 sha256:e0e0e0e0e0e0", "paused by carol@example.com (INC-1234)", "chain proven: 9/9 proven", "chain broken: 8/9 proven"} {
		if !strings.Contains(grid, want) {
			t.Errorf("grid: no %q in the visible text:\n%s", want, grid)
		}
	}
	screenshot(t, ctx, "grid.png", true)

	follow(t, ctx, `a[href="promotion/`+accepted+`.html"]`, "#arrow-9")
	checkArrows(t, ctx, accepted, []string{
		"source commit proven", "image digest proven", "staging desired commit proven", "staging observed revision proven",
		"staging runtime evidence proven", "production promotion PR proven", "production desired commit proven",
		"production observed revision proven", "production runtime evidence proven",
	})
	if s := text(t, ctx, "#arrow-5"); !strings.Contains(s, "checkout-5f7c9d8b6-x2k4p") || !strings.Contains(s, "Verified Exact") {
		t.Errorf("arrow staging runtime evidence: no Pod with its imageID match:\n%s", s)
	}
	if s := text(t, ctx, "#approvals + table"); !strings.Contains(s, "alice@example.com") || !strings.Contains(s, "bob@example.com") {
		t.Errorf("approvals:\n%s", s)
	}
	screenshot(t, ctx, "promotion.png", true)

	follow(t, ctx, `a[href="../app/checkout.html"]`, "#env-production")
	if s := text(t, ctx, "main"); !strings.Contains(s, "Accepted in production") || !strings.Contains(s, "rollback --to previous refuses") {
		t.Errorf("app page:\n%s", s)
	}
	screenshot(t, ctx, "app.png", false)

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/promotion/"+halted+".html")); err != nil {
		t.Fatalf("halted page: %v", err)
	}
	if s := text(t, ctx, "#arrow-9"); !strings.HasPrefix(s, "production runtime evidence broken HALTED (live)") ||
		!strings.Contains(s, "Mismatch") {
		t.Errorf("arrow production runtime evidence of %s: %s", halted, s)
	}
	screenshot(t, ctx, "halted.png", false)
}

// follow clicks the link sel and waits for wait on the new page.
func follow(t *testing.T, ctx context.Context, sel, wait string) {
	t.Helper()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("following %s: %v", sel, err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(wait))); err != nil {
		t.Fatalf("after following %s, waiting for %s: %v", sel, wait, err)
	}
}

// checkArrows reads each arrow's heading as the reader sees it.
func checkArrows(t *testing.T, ctx context.Context, id string, want []string) {
	t.Helper()
	for i, w := range want {
		sel := "#arrow-" + string(rune('1'+i)) + " h3"
		if got := text(t, ctx, sel); got != w {
			t.Errorf("%s arrow %d: %q, want %q", id, i+1, got, w)
		}
	}
}

// TestWebViewReport: the pages written as static files (throughline
// report) work from file:// with their relative links.
func TestWebViewReport(t *testing.T) {
	ctx := browser(t)
	f := chainfixture.New(t, example)
	m, err := chainview.Load(context.Background(), f.Repo, chainview.Options{Now: chainfixture.Now})
	if err != nil {
		t.Fatal(err)
	}
	site, err := chainview.NewSite(m)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := site.WriteSite(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(out, "index.html"))); err != nil {
		t.Fatalf("grid: %v", err)
	}
	follow(t, ctx, `a[href="app/cart.html"]`, "#env-production")
	if s := text(t, ctx, "main"); !strings.Contains(s, "rollback --to previous picks sha256:b0b0") {
		t.Errorf("cart's page: %s", s)
	}
	follow(t, ctx, `a[href="../promotion/cart-production-a0a0a0a0a0a0-2.html"]`, "#arrow-9")
	if s := text(t, ctx, "#arrow-5 h3"); s != "production prior runtime evidence proven" {
		t.Errorf("rollback arrow 5: %q", s)
	}
	// The stylesheet is linked relatively and applies: a proven status is green.
	color, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#arrow-9 .status")).color`))
	if err != nil || color != "rgb(11, 90, 38)" {
		t.Errorf("the stylesheet does not apply from file://: color %q, %v", color, err)
	}
	screenshot(t, ctx, "report-rollback.png", false)
}
