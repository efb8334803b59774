package forge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestContractSetCommitStatus serves each forge's documented commit status
// endpoint and checks the request the client sends:
//
//   - GitHub: POST /repos/{owner}/{repo}/statuses/{sha}, body state
//     (error|failure|pending|success), target_url, description, context;
//     201 with the status.
//   - GitLab: POST /api/v4/projects/:id/statuses/:sha, body state
//     (pending|running|success|failed|canceled), name, target_url,
//     description; PRIVATE-TOKEN; 201; 400 "Cannot transition status via
//     :success from :success" when the commit already has that state.
//   - Gitea: POST /api/v1/repos/{owner}/{repo}/statuses/{sha}, body state
//     (pending|success|error|failure|warning), target_url, description,
//     context; Authorization: token; 201.
func TestContractSetCommitStatus(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	st := CommitStatus{SHA: sha, State: StatusFailure, Context: "throughline/production/checkout", Description: "HALTED: wrong revision", TargetURL: "https://git.example.com/evidence"}
	for _, c := range []struct {
		kind     Kind
		path     string
		header   map[string]string
		body     map[string]string
		status   int
		response string
	}{
		{GitHub, "/repos/platform/gitops-env/statuses/" + sha,
			map[string]string{"Authorization": "Bearer tok", "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
			map[string]string{"state": "failure", "context": st.Context, "description": st.Description, "target_url": st.TargetURL},
			201, `{"id":1,"state":"failure","context":"throughline/production/checkout"}`},
		{GitLab, "/api/v4/projects/platform%2Finfra%2Fgitops-env/statuses/" + sha,
			map[string]string{"PRIVATE-TOKEN": "tok"},
			map[string]string{"state": "failed", "name": st.Context, "description": st.Description, "target_url": st.TargetURL},
			201, `{"id":93,"sha":"` + sha + `","status":"failed","name":"throughline/production/checkout"}`},
		{GitLab, "/api/v4/projects/platform%2Finfra%2Fgitops-env/statuses/" + sha,
			map[string]string{"PRIVATE-TOKEN": "tok"},
			map[string]string{"state": "failed", "name": st.Context},
			400, `{"message":"Cannot transition status via :drop from :failed"}`},
		{Gitea, "/api/v1/repos/platform/gitops-env/statuses/" + sha,
			map[string]string{"Authorization": "token tok"},
			map[string]string{"state": "failure", "context": st.Context, "description": st.Description, "target_url": st.TargetURL},
			201, `{"id":4,"status":"failure","context":"throughline/production/checkout"}`},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
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
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.response)
			}))
			defer srv.Close()
			repo := "platform/gitops-env"
			if c.kind == GitLab {
				repo = "platform/infra/gitops-env"
			}
			cl := &Client{Kind: c.kind, BaseURL: srv.URL, Repo: repo, Token: "tok", HTTP: srv.Client()}
			if err := cl.SetCommitStatus(context.Background(), st); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSetCommitStatusRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	cl := &Client{Kind: GitHub, BaseURL: srv.URL, Repo: "a/b", Token: "tok", HTTP: srv.Client()}
	err := cl.SetCommitStatus(context.Background(), CommitStatus{SHA: strings.Repeat("a", 40), State: StatusSuccess, Context: "x"})
	if err == nil || !Retryable(err) {
		t.Fatalf("502: err %v, want a retryable error", err)
	}
	if err := cl.SetCommitStatus(context.Background(), CommitStatus{SHA: "main", State: StatusSuccess}); err == nil || Retryable(&APIError{Status: 422}) {
		t.Fatal("a short sha must be refused, a 422 is not retryable")
	}
}
