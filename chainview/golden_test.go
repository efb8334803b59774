package chainview

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

var example = filepath.Join("..", "examples", "gitops-env")

// loadStory is the fixture's story read at main, judged at chainfixture.Now.
func loadStory(t *testing.T) (*chainfixture.Repo, *Site) {
	t.Helper()
	f := chainfixture.New(t, example)
	m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSite(m)
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

// TestGoldenPages: the grid, an ACCEPTED chain (checkout in production),
// a chain HALTED at the runtime evidence (web in production), a rollback
// (cart in production, and cart's accepted history), a paused app
// (search), each page as golden HTML.
func TestGoldenPages(t *testing.T) {
	t.Parallel()
	_, s := loadStory(t)
	files, err := s.Files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		"index.html": "grid.html",
		"promotion/checkout-production-4b7e2a91c3d5-1.html": "accepted.html",
		"promotion/web-production-e0e0e0e0e0e0-1.html":      "halted.html",
		"promotion/cart-production-a0a0a0a0a0a0-2.html":     "rollback.html",
		"app/cart.html":   "rollback-app.html",
		"app/search.html": "paused-app.html",
	} {
		got, ok := files[name]
		if !ok {
			var names []string
			for n := range files {
				names = append(names, n)
			}
			t.Fatalf("no page %s (pages: %s)", name, strings.Join(names, " "))
		}
		golden.Compare(t, "testdata/"+file, got)
		if bytes.Contains(got, []byte("<script")) {
			t.Errorf("%s has a script", name)
		}
	}
}

// TestInvalidRecordIsListed: a record that cannot be used is listed on
// the grid, naming its file, and the rest of the view still loads.
func TestInvalidRecordIsListed(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	f.Commit("a broken record", map[string][]byte{"promotion/bad/production.yaml": []byte("schemaVersion: promotion/v1\nstate: ACCEPTED\n")})
	m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Problems) != 1 || !strings.Contains(m.Problems[0], "promotion/bad/production.yaml") || len(m.Promotions) != 6 {
		t.Fatalf("problems %q, %d promotions", m.Problems, len(m.Promotions))
	}
	s, err := NewSite(m)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Index(&buf); err != nil || !strings.Contains(buf.String(), "Files that cannot be read") {
		t.Fatalf("grid: %v\n%s", err, buf.String())
	}
}

// TestPagesEscapeAndHideSecrets: a hostile reason (HTML and script in a
// HALTED record) is escaped, never markup; and no page shows the example's
// Secret value (the refused-secret overlay is in the repository read).
func TestPagesEscapeAndHideSecrets(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	rec := handRecord(t, f, "staging", pinned(f, "staging"), "alice@example.com") // halted by hand, markup in its reason
	must(t, rec.Stop(promotion.Halted, `<script>alert(1)</script><a href="javascript:x">x</a>`, f.Next(), "hand"))
	data, err := rec.Marshal()
	must(t, err)
	f.Commit("markup", map[string][]byte{promotion.RecordPath("api", "staging"): data})
	m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
	must(t, err)
	s, err := NewSite(m)
	must(t, err)
	files, err := s.Files(context.Background())
	must(t, err)
	page := string(files["promotion/"+rec.PromotionID+".html"])
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the reason is not shown escaped:\n%s", page)
	}
	for name, data := range files {
		for _, bad := range []string{"<script", `href="javascript:`, "demo-only-not-a-real-password"} {
			if strings.Contains(string(data), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}

// TestGoldenCandidacy: a record verified by its candidacy in a first
// environment (checkout in dev, promote candidate then promote verify),
// ACCEPTED: its page as golden HTML.
func TestGoldenCandidacy(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	a := f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1)
	m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSite(m)
	if err != nil {
		t.Fatal(err)
	}
	files, err := s.Files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, ok := files["promotion/"+a.Record.PromotionID+".html"]
	if !ok {
		t.Fatalf("no page of %s", a.Record.PromotionID)
	}
	golden.Compare(t, "testdata/candidacy.html", got)
}
