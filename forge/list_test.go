package forge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestContractListPullRequests: each forge's documented list and review
// calls, answered with recorded response shapes (testdata/list): the
// method, path, query and auth header each forge documents, and what is
// read of the answer: a fork's look-alike branch is a fork, a draft (or a
// Gitea WIP title) is a draft, approvals count each reviewer's last
// verdict, and only the requests under the prefix are reviewed.
func TestContractListPullRequests(t *testing.T) {
	t.Parallel()
	const branch = "throughline/promote/checkout/production/4b7e2a91c3d5-1"
	for _, tc := range []struct {
		kind                 Kind
		repo                 string
		header               map[string]string
		list, listQuery, rec string
		review, reviewRec    string
		reviewQuery          string
		want                 []Pull
	}{
		{
			kind: GitHub, repo: "platform/gitops-env",
			header: map[string]string{"Authorization": "Bearer tok", "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
			list:   "/repos/platform/gitops-env/pulls", listQuery: "page=1&per_page=50&state=open", rec: "github-pulls.json",
			review: "/repos/platform/gitops-env/pulls/1347/reviews", reviewRec: "github-reviews.json", reviewQuery: "page=1&per_page=100",
			want: []Pull{
				{Number: 1347, URL: "https://github.com/platform/gitops-env/pull/1347", Title: "promote checkout 1.4.2 to production", Head: branch,
					Base: "main", Approvals: 1},
				{Number: 1348, URL: "https://github.com/platform/gitops-env/pull/1348", Title: "fork look-alike", Draft: true, Head: branch, Base: "main",
					Fork: true, Approvals: -1},
			},
		},
		{
			kind: GitLab, repo: "platform/infra/gitops-env", header: map[string]string{"PRIVATE-TOKEN": "tok"},
			list: "/api/v4/projects/platform%2Finfra%2Fgitops-env/merge_requests", listQuery: "page=1&per_page=50&state=opened",
			rec:    "gitlab-merge-requests.json",
			review: "/api/v4/projects/platform%2Finfra%2Fgitops-env/merge_requests/12/approvals", reviewRec: "gitlab-approvals.json",
			want: []Pull{
				{Number: 12, URL: "https://gitlab.example.com/platform/infra/gitops-env/-/merge_requests/12", Title: "promote checkout 1.4.2 to production",
					Head: branch, Base: "main", Approvals: 2},
				{Number: 13, URL: "https://gitlab.example.com/platform/infra/gitops-env/-/merge_requests/13", Title: "Draft: fork look-alike", Draft: true,
					Head: branch, Base: "main", Fork: true, Approvals: -1},
			},
		},
		{
			kind: Gitea, repo: "platform/gitops-env", header: map[string]string{"Authorization": "token tok", "Accept": "application/json"},
			list: "/api/v1/repos/platform/gitops-env/pulls", listQuery: "limit=50&page=1&state=open", rec: "gitea-pulls.json",
			review: "/api/v1/repos/platform/gitops-env/pulls/7/reviews", reviewRec: "gitea-reviews.json", reviewQuery: "limit=100&page=1",
			want: []Pull{
				{Number: 7, URL: "https://gitea.example.com/platform/gitops-env/pulls/7", Title: "WIP: promote checkout 1.4.2 to production", Draft: true,
					Head: branch, Base: "main", Approvals: 2},
				{Number: 8, URL: "https://gitea.example.com/platform/gitops-env/pulls/8", Title: "unrelated", Head: "feature/x", Base: "main", Approvals: -1},
			},
		},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet {
					t.Errorf("%s %s, want GET", r.Method, r.URL)
				}
				for k, v := range tc.header {
					if got := r.Header.Get(k); got != v {
						t.Errorf("header %s = %q, want %q", k, got, v)
					}
				}
				var file string
				if page := r.URL.Query().Get("page"); page != "" && page != "1" {
					_, _ = w.Write([]byte(`[]`)) // one page of each
					return
				}
				switch r.URL.EscapedPath() {
				case tc.list:
					if q := r.URL.Query().Encode(); q != tc.listQuery {
						t.Errorf("list query %s, want %s", q, tc.listQuery)
					}
					file = tc.rec
				case tc.review:
					if q := r.URL.Query().Encode(); q != tc.reviewQuery {
						t.Errorf("review query %s, want %s", q, tc.reviewQuery)
					}
					file = tc.reviewRec
				default:
					t.Errorf("unexpected %s %s", r.Method, r.URL.EscapedPath())
					w.WriteHeader(http.StatusNotFound)
					return
				}
				data, err := os.ReadFile("testdata/list/" + file)
				if err != nil {
					t.Error(err)
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(data)
			}))
			defer srv.Close()
			c := &Client{Kind: tc.kind, BaseURL: srv.URL, Repo: tc.repo, Token: "tok", HTTP: srv.Client()}
			got, err := c.ListPullRequests(context.Background(), "throughline/promote/")
			if err != nil {
				t.Fatal(err)
			}
			if got.Truncated || !reflect.DeepEqual(got.Pulls, tc.want) {
				t.Fatalf("listed %+v (truncated %v),\nwant %+v", got.Pulls, got.Truncated, tc.want)
			}
		})
	}
}

// TestListPullRequestsBounded: a forge with endless full pages is asked
// ListPages pages and the list says it is truncated; a page larger than
// the body limit is an error, not a partial list; a refusal is an
// *APIError that does not carry the token.
func TestListPullRequestsBounded(t *testing.T) {
	t.Parallel()
	var pages atomic.Int32
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/reviews") {
			_, _ = w.Write([]byte(`[]`))
			return
		}
		pages.Add(1)
		var b strings.Builder
		b.WriteString("[")
		for i := range ListPerPage {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"number":%d,"html_url":"u","head":{"ref":"feature/%d","repo":{"full_name":"a/b"}},"base":{"ref":"main"}}`, i+1, i)
		}
		b.WriteString("]")
		_, _ = w.Write([]byte(b.String()))
	}))
	defer endless.Close()
	c := &Client{Kind: GitHub, BaseURL: endless.URL, Repo: "a/b", Token: "secret-token-value", HTTP: endless.Client()}
	got, err := c.ListPullRequests(context.Background(), "throughline/promote/")
	if err != nil || !got.Truncated || len(got.Pulls) != ListPages*ListPerPage || pages.Load() != ListPages {
		t.Fatalf("endless pages: %v, truncated %v, %d requests in %d pages, want %d pages", err, got != nil && got.Truncated,
			len(got.Pulls), pages.Load(), ListPages)
	}

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[{"number":1,"title":"` + strings.Repeat("x", 2<<20) + `"}]`))
	}))
	defer huge.Close()
	c = &Client{Kind: Gitea, BaseURL: huge.URL, Repo: "a/b", Token: "secret-token-value", HTTP: huge.Client()}
	if got, err := c.ListPullRequests(context.Background(), "throughline/promote/"); err == nil {
		t.Fatalf("a 2 MiB page was read: %d requests", len(got.Pulls))
	}

	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"message":"boom"}`))
	}))
	defer refuse.Close()
	c = &Client{Kind: GitLab, BaseURL: refuse.URL, Repo: "a/b", Token: "secret-token-value", HTTP: refuse.Client()}
	_, err = c.ListPullRequests(context.Background(), "throughline/promote/")
	var ae *APIError
	if err == nil || !errors.As(err, &ae) || ae.Status != 500 || strings.Contains(err.Error(), "secret-token-value") {
		t.Fatalf("a 500: %v", err)
	}
}

// answer is a transport answering every request with one body.
type answer []byte

func (a answer) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(a)), Header: http.Header{}, Request: r}, nil
}

// FuzzListPullRequests: the forge's answers are untrusted input; reading
// any of them as a list (and as reviews) never panics, asks at most
// ListPages pages, and a request it lists keeps what the forge said of
// its head.
func FuzzListPullRequests(f *testing.F) {
	for _, name := range []string{"github-pulls.json", "gitlab-merge-requests.json", "gitea-pulls.json", "github-reviews.json", "gitlab-approvals.json"} {
		data, err := os.ReadFile("testdata/list/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0))
	}
	f.Add([]byte(`[{"number":1,"head":null,"base":null}]`), uint8(1))
	f.Add([]byte(`[{"iid":-1,"source_branch":"throughline/promote/x"}]`), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		kind := []Kind{GitHub, GitLab, Gitea}[int(k)%3]
		c := &Client{Kind: kind, BaseURL: "http://forge.invalid", Repo: "a/b", Token: "t", HTTP: &http.Client{Transport: answer(data)}}
		l, err := c.ListPullRequests(context.Background(), "throughline/promote/")
		if err != nil {
			return
		}
		if len(l.Pulls) > ListPages*max(len(data), 1) {
			t.Fatalf("%d requests from %d bytes", len(l.Pulls), len(data))
		}
		for _, p := range l.Pulls {
			if p.Approvals < -1 {
				t.Fatalf("approvals %d", p.Approvals)
			}
		}
	})
}

// TestListApprovalsPaged: a request's reviews span pages. GitHub answers
// 100 reviews a page; Gitea as many as its MAX_RESPONSE_ITEMS allows,
// which may be fewer than asked. The verdict of a reviewer is their last
// review, so a count read from the first page only is wrong both ways: an
// approval on page 3 is missed, and an approval on page 1 withdrawn on
// page 3 still counts. A forge with endless pages of reviews gives -1
// (not asked to the end), never a count. (An httptest server answers as
// the forges document it: no GitHub or Gitea can run here.)
func TestListApprovalsPaged(t *testing.T) {
	t.Parallel()
	const branch = "throughline/promote/checkout/production/4b7e2a91c3d5-1"
	review := func(login, state string) string {
		return fmt.Sprintf(`{"user":{"login":%q},"state":%q}`, login, state)
	}
	// 231 reviews: alice approves first and asks for changes near the end,
	// bob and dave approve last, the rest are comments: 2 approvals (the
	// first page alone says 1, alice's).
	var all []string
	all = append(all, review("alice", "APPROVED"))
	for range 227 {
		all = append(all, review("carol", "COMMENTED"))
	}
	all = append(all, review("alice", "CHANGES_REQUESTED"), review("bob", "APPROVED"), review("dave", "APPROVED"))
	for _, tc := range []struct {
		name    string
		kind    Kind
		perPage func(r *http.Request) int // what the forge answers per page
		endless bool
		want    int
	}{
		{name: "github", kind: GitHub, perPage: func(r *http.Request) int { return min(atoi(r.URL.Query().Get("per_page"), 30), 100) }, want: 2},
		{name: "gitea capped at 30", kind: Gitea, perPage: func(*http.Request) int { return 30 }, want: 2},
		{name: "github endless", kind: GitHub, perPage: func(*http.Request) int { return 100 }, endless: true, want: -1},
		{name: "gitea endless", kind: Gitea, perPage: func(*http.Request) int { return 50 }, endless: true, want: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var pages atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				page := atoi(r.URL.Query().Get("page"), 1)
				if !strings.HasSuffix(r.URL.Path, "/reviews") {
					if page > 1 {
						_, _ = w.Write([]byte(`[]`))
						return
					}
					fmt.Fprintf(w, `[{"number":5,"html_url":"u","head":{"ref":%q,"repo":{"full_name":"a/b"}},"base":{"ref":"main"}}]`, branch)
					return
				}
				pages.Add(1)
				n := tc.perPage(r)
				from, to := (page-1)*n, page*n
				var items []string
				if tc.endless {
					for range n {
						items = append(items, review("carol", "COMMENTED"))
					}
				} else if from < len(all) {
					items = all[from:min(to, len(all))]
				}
				_, _ = w.Write([]byte("[" + strings.Join(items, ",") + "]"))
			}))
			defer srv.Close()
			c := &Client{Kind: tc.kind, BaseURL: srv.URL, Repo: "a/b", Token: "tok", HTTP: srv.Client()}
			got, err := c.ListPullRequests(context.Background(), "throughline/promote/")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Pulls) != 1 || got.Pulls[0].Approvals != tc.want {
				t.Fatalf("listed %+v, want one request with %d approvals (%d pages of reviews read)", got.Pulls, tc.want, pages.Load())
			}
			if tc.endless && pages.Load() > ReviewPages {
				t.Fatalf("%d pages of reviews read, bound %d", pages.Load(), ReviewPages)
			}
		})
	}
}

func atoi(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// TestGiteaListCapped: a Gitea whose MAX_RESPONSE_ITEMS is below the
// limit asked answers short pages that are not the last; every open
// request is listed. (An httptest server answers as Gitea does.)
func TestGiteaListCapped(t *testing.T) {
	t.Parallel()
	const open, capped = 45, 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/reviews") {
			_, _ = w.Write([]byte(`[]`))
			return
		}
		page := atoi(r.URL.Query().Get("page"), 1)
		var items []string
		for n := (page-1)*capped + 1; n <= min(page*capped, open); n++ {
			items = append(items, fmt.Sprintf(`{"number":%d,"html_url":"u","head":{"ref":"feature/%d","repo":{"full_name":"a/b"}},"base":{"ref":"main"}}`, n, n))
		}
		_, _ = w.Write([]byte("[" + strings.Join(items, ",") + "]"))
	}))
	defer srv.Close()
	c := &Client{Kind: Gitea, BaseURL: srv.URL, Repo: "a/b", Token: "tok", HTTP: srv.Client()}
	got, err := c.ListPullRequests(context.Background(), "throughline/promote/")
	if err != nil || got.Truncated || len(got.Pulls) != open {
		t.Fatalf("listed %d of %d open requests (truncated %v): %v", len(got.Pulls), open, got != nil && got.Truncated, err)
	}
}
