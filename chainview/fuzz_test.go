package chainview

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
)

// FuzzRoute: any request path either names a page of the model (index,
// a promotion, an app) or is not found; no path reads anything else. Any
// query string either filters the index or is refused as a bad filter.
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
		f.Add(p, "")
	}
	for _, q := range []string{"app=cart", "env=production&state=HALTED", "state=IN-FLIGHT", "app=../x", "state=<b>", "env=nope"} {
		f.Add("/", q)
	}
	f.Fuzz(func(t *testing.T, p, q string) {
		found, err := route(s, io.Discard, &url.URL{Path: p, RawQuery: q})
		var bad *badFilter
		if errors.As(err, &bad) && (p == "/" || p == "/index.html") {
			return
		}
		if err != nil {
			t.Fatalf("%q?%q: %v", p, q, err)
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
