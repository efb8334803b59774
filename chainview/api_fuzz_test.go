package chainview

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/promotion"
)

// FuzzAPIApplication: any query and Argocd-Application-Name header either
// names an app and an environment (both names) or is refused with a 4xx;
// what is refused never reaches the model, and nothing panics.
func FuzzAPIApplication(f *testing.F) {
	repo := chainfixture.New(f, example)
	h := &Handler{Repo: repo.Repo}
	m, err := Load(context.Background(), repo.Repo, Options{Now: chainfixture.Now})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][2]string{{"app=checkout&env=production", ""}, {"", "argocd:checkout-production"}, {"", "argocd:web-production"},
		{"app=../x&env=production", ""}, {"", "argocd:"}, {"", ":-production"}, {"", "a:b:c-production"}, {"app=checkout", ""},
		{"app=checkout&env=production&app=web", "x:y"}, {"env=%00", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, q, header string) {
		r := &http.Request{Method: "GET", URL: &url.URL{Path: APIApplication, RawQuery: q}, Header: http.Header{}}
		r.Header.Set(HeaderApplication, header)
		app, env, err := m.ResolveApp(r)
		var ae *apiError
		if err != nil {
			if !errors.As(err, &ae) || ae.code < 400 || ae.code > 499 {
				t.Fatalf("%q %q: %v, want a 4xx", q, header, err)
			}
			return
		}
		if !promotion.ValidName(app) || !promotion.ValidName(env) {
			t.Fatalf("%q %q: resolved to %q %q", q, header, app, env)
		}
		if _, err := h.appStatus(context.Background(), m, r, time.Now()); err != nil && !errors.As(err, &ae) {
			t.Fatalf("%q %q: %v", q, header, err)
		}
	})
}
