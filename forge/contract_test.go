package forge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The contract tests serve the request and response shapes documented by
// each forge's public API and check that the client sends exactly what the
// documentation requires and reads what it returns:
//
//   - GitHub: POST /repos/{owner}/{repo}/pulls, "Create a pull request"
//     (docs.github.com/en/rest/pulls/pulls#create-a-pull-request): JSON body
//     title, head, base, body; Authorization: Bearer; Accept:
//     application/vnd.github+json; X-GitHub-Api-Version: 2022-11-28;
//     201 with number and html_url; 422 "A pull request already exists".
//   - GitLab: POST /api/v4/projects/:id/merge_requests, "Create MR"
//     (docs.gitlab.com/api/merge_requests/#create-mr): id is the URL-encoded
//     project path; source_branch, target_branch, title, description;
//     PRIVATE-TOKEN header; 201 with iid and web_url; 409 when one exists.
//   - Gitea: POST /api/v1/repos/{owner}/{repo}/pulls, repoCreatePullRequest
//     (Gitea's swagger, CreatePullRequestOption): head, base, title, body;
//     Authorization: token; 201 with number and html_url; 409 when one exists.
type contract struct {
	kind       Kind
	path       string
	header     map[string]string
	body       map[string]string
	status     int
	response   string
	wantURL    string
	wantNumber int
}

// server answers one documented request: it checks the method, path, headers
// and JSON body fields the forge's documentation requires, then replies with
// the documented status and response. Closed when the test ends.
func (c contract) server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.EscapedPath() != c.path {
			t.Errorf("%s %s, want POST %s", r.Method, r.URL.EscapedPath(), c.path)
		}
		for k, v := range c.header {
			if got := r.Header.Get(k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		raw, _ := io.ReadAll(r.Body)
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Errorf("body %s: %v", raw, err)
		}
		for k, v := range c.body {
			if got[k] != v {
				t.Errorf("body %s = %v, want %q", k, got[k], v)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(c.status)
		_, _ = io.WriteString(w, c.response)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// repo is the repository the contract's path names (GitLab's is nested).
func (c contract) repo() string {
	if c.kind == GitLab {
		return "platform/infra/gitops-env"
	}
	return "platform/gitops-env"
}

func TestContractOpenPullRequest(t *testing.T) {
	pr := PullRequest{Title: "promote checkout", Body: "| class |", Head: "throughline/promote/checkout/production/4b7e2a91c3d5-1", Base: "main"}
	for _, c := range []contract{
		{
			kind: GitHub, path: "/repos/platform/gitops-env/pulls",
			header: map[string]string{"Authorization": "Bearer tok", "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"},
			body:   map[string]string{"title": pr.Title, "head": pr.Head, "base": "main", "body": pr.Body},
			status: 201, response: `{"id":1,"number":1347,"state":"open","html_url":"https://github.com/platform/gitops-env/pull/1347","head":{"ref":"x"},"base":{"ref":"main"}}`,
			wantURL: "https://github.com/platform/gitops-env/pull/1347", wantNumber: 1347,
		},
		{
			kind: GitLab, path: "/api/v4/projects/platform%2Finfra%2Fgitops-env/merge_requests",
			header: map[string]string{"PRIVATE-TOKEN": "tok", "Content-Type": "application/json"},
			body:   map[string]string{"source_branch": pr.Head, "target_branch": "main", "title": pr.Title, "description": pr.Body},
			status: 201, response: `{"id":76,"iid":12,"project_id":3,"title":"promote checkout","state":"opened","web_url":"https://gitlab.example.com/platform/infra/gitops-env/-/merge_requests/12"}`,
			wantURL: "https://gitlab.example.com/platform/infra/gitops-env/-/merge_requests/12", wantNumber: 12,
		},
		{
			kind: Gitea, path: "/api/v1/repos/platform/gitops-env/pulls",
			header: map[string]string{"Authorization": "token tok", "Content-Type": "application/json"},
			body:   map[string]string{"title": pr.Title, "head": pr.Head, "base": "main", "body": pr.Body},
			status: 201, response: `{"id":5,"number":7,"state":"open","html_url":"https://gitea.example.com/platform/gitops-env/pulls/7"}`,
			wantURL: "https://gitea.example.com/platform/gitops-env/pulls/7", wantNumber: 7,
		},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			srv := c.server(t)
			t.Setenv("THROUGHLINE_FORGE_TOKEN", "tok")
			cl, err := New(c.kind, srv.URL, c.repo())
			if err != nil {
				t.Fatal(err)
			}
			o, err := cl.OpenPullRequest(context.Background(), pr)
			if err != nil {
				t.Fatal(err)
			}
			if o.URL != c.wantURL || o.Number != c.wantNumber {
				t.Fatalf("opened %+v, want %s #%d", o, c.wantURL, c.wantNumber)
			}
		})
	}
}

// TestContractAlreadyExists: the documented "already exists" answers.
func TestContractAlreadyExists(t *testing.T) {
	for kind, resp := range map[Kind]struct {
		status int
		body   string
	}{
		GitHub: {422, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for platform:throughline/promote/x."}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`},
		GitLab: {409, `{"message":["Another open merge request already exists for this source branch: !12"]}`},
		Gitea:  {409, `{"message":"pull request already exists for these targets","url":"https://gitea.example.com/api/swagger"}`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(resp.status)
			_, _ = io.WriteString(w, resp.body)
		}))
		t.Setenv("GITHUB_TOKEN", "x")
		t.Setenv("GITLAB_TOKEN", "x")
		t.Setenv("GITEA_TOKEN", "x")
		cl, err := New(kind, srv.URL, "a/b")
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.OpenPullRequest(context.Background(), PullRequest{Title: "t", Head: "h", Base: "main"})
		var apiErr *APIError
		if !errors.Is(err, ErrAlreadyExists) || !errors.As(err, &apiErr) || apiErr.Status != resp.status {
			t.Errorf("%s: %v", kind, err)
		}
		srv.Close()
	}
}

func TestNewNeedsTokenAndRepo(t *testing.T) {
	t.Setenv("THROUGHLINE_FORGE_TOKEN", "")
	t.Setenv("GITHUB_TOKEN", "")
	if _, err := New(GitHub, "", "a/b"); err == nil {
		t.Fatal("no token accepted")
	}
	t.Setenv("GITHUB_TOKEN", "x")
	if _, err := New(GitHub, "", "ab"); err == nil {
		t.Fatal("repo without owner accepted")
	}
	if _, err := New(Gitea, "", "a/b"); err == nil {
		t.Fatal("gitea without URL accepted")
	}
	if _, err := New("bitbucket", "", "a/b"); err == nil {
		t.Fatal("unknown forge accepted")
	}
}
