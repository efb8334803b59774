package forge

import (
	"context"
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
	t.Parallel()
	sha := strings.Repeat("ab", 20)
	st := CommitStatus{SHA: sha, State: StatusFailure, Context: "throughline/production/checkout", Description: "HALTED: wrong revision", TargetURL: "https://git.example.com/evidence"}
	for _, c := range []contract{
		{kind: GitHub, path: "/repos/platform/gitops-env/statuses/" + sha,
			header: map[string]string{"Authorization": "Bearer tok", "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
			body:   map[string]string{"state": "failure", "context": st.Context, "description": st.Description, "target_url": st.TargetURL},
			status: 201, response: `{"id":1,"state":"failure","context":"throughline/production/checkout"}`},
		{kind: GitLab, path: "/api/v4/projects/platform%2Finfra%2Fgitops-env/statuses/" + sha,
			header: map[string]string{"PRIVATE-TOKEN": "tok"},
			body:   map[string]string{"state": "failed", "name": st.Context, "description": st.Description, "target_url": st.TargetURL},
			status: 201, response: `{"id":93,"sha":"` + sha + `","status":"failed","name":"throughline/production/checkout"}`},
		{kind: GitLab, path: "/api/v4/projects/platform%2Finfra%2Fgitops-env/statuses/" + sha,
			header: map[string]string{"PRIVATE-TOKEN": "tok"},
			body:   map[string]string{"state": "failed", "name": st.Context},
			status: 400, response: `{"message":"Cannot transition status via :drop from :failed"}`},
		{kind: Gitea, path: "/api/v1/repos/platform/gitops-env/statuses/" + sha,
			header: map[string]string{"Authorization": "token tok"},
			body:   map[string]string{"state": "failure", "context": st.Context, "description": st.Description, "target_url": st.TargetURL},
			status: 201, response: `{"id":4,"status":"failure","context":"throughline/production/checkout"}`},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			srv := c.server(t)
			cl := &Client{Kind: c.kind, BaseURL: srv.URL, Repo: c.repo(), Token: "tok", HTTP: srv.Client()}
			if err := cl.SetCommitStatus(context.Background(), st); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSetCommitStatusRefusals(t *testing.T) {
	t.Parallel()
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
