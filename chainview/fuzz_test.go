package chainview

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

// FuzzRoute: any request path either names a page of the model (index,
// a promotion, an app) or is not found; no path reads anything else.
func FuzzRoute(f *testing.F) {
	repo := chainfixture.New(f, example)
	m, err := Load(context.Background(), repo.Repo, Options{Now: chainfixture.Now})
	if err != nil {
		f.Fatal(err)
	}
	s, err := NewSite(m)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{"/", "/index.html", "/promotion/checkout-production-4b7e2a91c3d5-1.html", "/app/cart.html",
		"/app/../../etc/passwd.html", "/promotion/.html", "/app/%2e%2e.html", "/style.css"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		found, err := route(s, io.Discard, p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if !found {
			return
		}
		switch {
		case p == "/" || p == "/index.html":
		case strings.HasPrefix(p, "/promotion/"):
			if m.Promotions[strings.TrimSuffix(strings.TrimPrefix(p, "/promotion/"), ".html")] == nil {
				t.Fatalf("%q served a page of no promotion", p)
			}
		case strings.HasPrefix(p, "/app/"):
			name := strings.TrimSuffix(strings.TrimPrefix(p, "/app/"), ".html")
			if strings.ContainsAny(name, "/.%") {
				t.Fatalf("%q served", p)
			}
		default:
			t.Fatalf("%q served", p)
		}
	})
}
