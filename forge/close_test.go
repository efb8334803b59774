package forge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestClosePullRequests: each forge's documented list and close calls;
// only the requests whose head is the branch are closed.
func TestClosePullRequests(t *testing.T) {
	t.Parallel()
	const branch = "throughline/promote/checkout/production/4b7e2a91c3d5-1"
	for _, tc := range []struct {
		kind             Kind
		repo             string
		list, listQuery  string
		listBody         string
		closeMethod, one string
		closeKey, value  string
	}{
		{GitHub, "platform/gitops-env", "/repos/platform/gitops-env/pulls", "head=platform%3A" + escapeSlashes(branch) + "&state=open",
			`[{"number":7,"head":{"ref":"` + branch + `"}}]`, http.MethodPatch, "/repos/platform/gitops-env/pulls/7", "state", "closed"},
		{GitLab, "platform/infra/gitops-env", "/api/v4/projects/platform%2Finfra%2Fgitops-env/merge_requests", "source_branch=" + escapeSlashes(branch) + "&state=opened",
			`[{"iid":3,"source_branch":"` + branch + `"}]`, http.MethodPut, "/api/v4/projects/platform%2Finfra%2Fgitops-env/merge_requests/3", "state_event", "close"},
		{Gitea, "platform/gitops-env", "/api/v1/repos/platform/gitops-env/pulls", "state=open",
			`[{"number":9,"head":{"ref":"` + branch + `"}},{"number":10,"head":{"ref":"other"}}]`, http.MethodPatch, "/api/v1/repos/platform/gitops-env/pulls/9", "state", "closed"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			var closedPaths []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodGet && r.URL.EscapedPath() == tc.list:
					if q := r.URL.Query().Encode(); q != tc.listQuery {
						t.Errorf("list query %s, want %s", q, tc.listQuery)
					}
					_, _ = io.WriteString(w, tc.listBody)
				case r.Method == tc.closeMethod:
					raw, _ := io.ReadAll(r.Body)
					var got map[string]string
					if err := json.Unmarshal(raw, &got); err != nil || got[tc.closeKey] != tc.value {
						t.Errorf("close body %s, want %s=%s", raw, tc.closeKey, tc.value)
					}
					closedPaths = append(closedPaths, r.URL.EscapedPath())
					_, _ = io.WriteString(w, `{}`)
				default:
					t.Errorf("unexpected %s %s", r.Method, r.URL.EscapedPath())
					w.WriteHeader(http.StatusNotFound)
				}
			}))
			defer srv.Close()
			c := &Client{Kind: tc.kind, BaseURL: srv.URL, Repo: tc.repo, Token: "t", HTTP: srv.Client()}
			n, err := c.ClosePullRequests(context.Background(), branch)
			if err != nil || len(n) != 1 || !slices.Equal(closedPaths, []string{tc.one}) {
				t.Fatalf("closed %v %v (paths %v), want only %s", n, err, closedPaths, tc.one)
			}
		})
	}
}

func escapeSlashes(s string) string {
	out := ""
	for _, r := range s {
		if r == '/' {
			out += "%2F"
		} else {
			out += string(r)
		}
	}
	return out
}
