package chartsource_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// TestHTTPChartPinnedByDigest: an HTTP chart repository's version resolves
// to the sha256 of its .tgz (equal to index.yaml's digest); the render gets
// that package; a warm fetch makes no request; a repository that replaced
// the package (index updated or not) is refused naming both digests.
func TestHTTPChartPinnedByDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := chartfixture.StartRepo(t)
	pkg := chartTgz(t, "web", "1.2.3", "first")
	repo.Publish(t, [][]byte{pkg}, "", "")
	ref := chartsource.Ref{Repo: repo.URL(), Name: "web", Version: "1.2.3"}
	cacheDir := t.TempDir()
	res, err := fetcher(cacheDir).Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != sha(pkg) || res.Kind != chartsource.KindHTTP {
		t.Fatalf("resolved %+v, want %s", res, sha(pkg))
	}
	e := chartsource.Entry{Repo: ref.Repo, Name: ref.Name, Version: ref.Version, Digest: res.Digest}
	fsys := repoWithLock(t, "apps/web", e)
	if got, err := (chartsource.Source{FS: fsys, Fetcher: fetcher(t.TempDir())}).Chart(ctx, "apps/web", ref); err != nil || !bytes.Equal(got, pkg) {
		t.Fatalf("cold Chart: %v", err)
	}
	before := repo.Hits.Load()
	if got, err := (chartsource.Source{FS: fsys, Fetcher: fetcher(cacheDir)}).Chart(ctx, "apps/web", ref); err != nil || !bytes.Equal(got, pkg) {
		t.Fatalf("warm Chart: %v", err)
	}
	if n := repo.Hits.Load() - before; n != 0 {
		t.Fatalf("warm fetch made %d requests, want 0", n)
	}

	// The attack: the repository replaces the package of 1.2.3 and its index.
	evil := chartTgz(t, "web", "1.2.3", "replaced")
	repo.Publish(t, [][]byte{evil}, "", "")
	_, err = fetcher(t.TempDir()).Fetch(ctx, e)
	wantRefusal(t, err, chartsource.RuleChartDigestMismatch, sha(pkg), sha(evil))
	// ... or only the package, the index still naming the old digest.
	repo.Set("/stable/index.yaml", chartfixture.IndexFor(t, pkg))
	repo.Set("/stable/charts/web-1.2.3.tgz", evil)
	_, err = fetcher(t.TempDir()).Fetch(ctx, e)
	wantRefusal(t, err, chartsource.RuleChartDigestMismatch, sha(evil), sha(pkg))
	rep := chartsource.CheckDrift(ctx, []chartsource.SourcedRecord{{Record: chartsource.NewRecord(res, res2time()), File: "r.yaml"}},
		fetcher(t.TempDir()))
	if len(rep.Drifts) != 1 {
		t.Fatalf("drift check of a replaced package: %+v", rep)
	}
}

// TestHTTPRefusals: a repository may serve its packages only from its own
// host and within the caps; nothing is requested of another host.
func TestHTTPRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var foreignHits atomic.Int64
	foreign := httptest.NewServer(counter(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("not a chart"))
	}), &foreignHits))
	t.Cleanup(foreign.Close)
	pkg := chartTgz(t, "web", "1.2.3", "x")

	for _, tc := range []struct {
		name  string
		setup func(r *chartfixture.Repo)
		opts  func(*chartsource.Options)
		rule  string
		code  int
		part  string
	}{
		{name: "index url on another host", rule: chartsource.RuleChartForeignHost, part: foreign.URL,
			setup: func(r *chartfixture.Repo) { r.Publish(t, [][]byte{pkg}, foreign.URL+"/web-1.2.3.tgz", "") }},
		{name: "index url with another scheme", rule: chartsource.RuleChartForeignHost, part: "file:///etc/passwd",
			setup: func(r *chartfixture.Repo) { r.Publish(t, [][]byte{pkg}, "file:///etc/passwd", "") }},
		{name: "package redirected to another host", rule: chartsource.RuleChartForeignHost, part: "refused",
			setup: func(r *chartfixture.Repo) {
				r.Publish(t, [][]byte{pkg}, "", "")
				r.Server.Config.Handler = redirectPackages(r.Server.Config.Handler, foreign.URL)
			}},
		{name: "package bigger than the cap", rule: chartsource.RuleChartTooLarge, part: "byte limit",
			setup: func(r *chartfixture.Repo) { r.Publish(t, [][]byte{pkg}, "", "") },
			opts:  func(o *chartsource.Options) { o.MaxChartSize = 64 }},
		{name: "index bigger than the cap", rule: chartsource.RuleChartTooLarge, part: "index.yaml",
			setup: func(r *chartfixture.Repo) { r.Publish(t, [][]byte{pkg}, "", "") },
			opts:  func(o *chartsource.Options) { o.MaxIndexSize = 64 }},
		{name: "index with a bogus digest", rule: chartsource.RuleChartDigestMismatch, part: "index.yaml says",
			setup: func(r *chartfixture.Repo) { r.Publish(t, [][]byte{pkg}, "", "0") }},
		{name: "version not in the index", code: exitcode.Invalid, part: "no version 1.2.3",
			setup: func(r *chartfixture.Repo) { r.Publish(t, [][]byte{chartTgz(t, "web", "1.2.4", "x")}, "", "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := chartfixture.StartRepo(t)
			tc.setup(repo)
			f := fetcher(t.TempDir())
			if tc.opts != nil {
				f = fetcher(t.TempDir(), tc.opts)
			}
			before := foreignHits.Load()
			_, err := f.Fetch(ctx, chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)})
			if tc.rule != "" {
				wantRefusal(t, err, tc.rule, tc.part)
			} else if exitcode.Code(err) != tc.code || !strings.Contains(err.Error(), tc.part) {
				t.Fatalf("want exit %d naming %q, got exit %d: %v", tc.code, tc.part, exitcode.Code(err), err)
			}
			if n := foreignHits.Load() - before; n != 0 {
				t.Fatalf("%d requests reached the other host", n)
			}
		})
	}
}

// redirectPackages answers every .tgz request with a redirect to target.
func redirectPackages(h http.Handler, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tgz") {
			http.Redirect(w, r, target+"/x.tgz", http.StatusFound)
			return
		}
		h.ServeHTTP(w, r)
	})
}
