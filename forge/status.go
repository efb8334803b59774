package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// StatusState is the state of a commit status, in throughline's words; each
// forge gets its own spelling.
type StatusState string

// The commit status states.
const (
	StatusPending StatusState = "pending"
	StatusSuccess StatusState = "success"
	StatusFailure StatusState = "failure"
)

// CommitStatus is a status set on one commit.
type CommitStatus struct {
	// SHA is the full commit id.
	SHA   string
	State StatusState
	// Context names the check (GitLab: name), e.g. throughline/production/checkout.
	Context     string
	Description string
	TargetURL   string
}

// SetCommitStatus creates a commit status on c's repository:
//
//   - GitHub: POST /repos/{owner}/{repo}/statuses/{sha}
//     (docs.github.com/rest/commits/statuses#create-a-commit-status);
//   - GitLab: POST /api/v4/projects/:id/statuses/:sha
//     (docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit);
//     re-posting the state a commit already has is refused by GitLab with
//     400 "Cannot transition status", which is success here;
//   - Gitea: POST /api/v1/repos/{owner}/{repo}/statuses/{sha}
//     (Gitea swagger: repoCreateStatus).
func (c *Client) SetCommitStatus(ctx context.Context, st CommitStatus) error {
	if len(st.SHA) != 40 && len(st.SHA) != 64 {
		return fmt.Errorf("%s commit status on %q: not a full commit id", c.Kind, st.SHA)
	}
	desc := st.Description
	if len(desc) > 140 { // GitHub's limit
		desc = desc[:137] + "..."
	}
	var (
		endpoint string
		body     = map[string]any{"description": desc}
		header   = http.Header{}
	)
	if st.TargetURL != "" {
		body["target_url"] = st.TargetURL
	}
	owner, name, _ := strings.Cut(c.Repo, "/")
	switch c.Kind {
	case GitHub:
		endpoint = fmt.Sprintf("%s/repos/%s/%s/statuses/%s", c.BaseURL, url.PathEscape(owner), url.PathEscape(name), st.SHA)
		body["state"], body["context"] = string(st.State), st.Context
		header.Set("Authorization", "Bearer "+c.Token)
		header.Set("Accept", "application/vnd.github+json")
		header.Set("X-GitHub-Api-Version", "2022-11-28")
	case GitLab:
		endpoint = fmt.Sprintf("%s/api/v4/projects/%s/statuses/%s", c.BaseURL, url.PathEscape(c.Repo), st.SHA)
		state := string(st.State)
		if st.State == StatusFailure {
			state = "failed"
		}
		body["state"], body["name"] = state, st.Context
		header.Set("PRIVATE-TOKEN", c.Token)
	case Gitea:
		endpoint = fmt.Sprintf("%s/api/v1/repos/%s/%s/statuses/%s", c.BaseURL, url.PathEscape(owner), url.PathEscape(name), st.SHA)
		body["state"], body["context"] = string(st.State), st.Context
		header.Set("Authorization", "token "+c.Token)
		header.Set("Accept", "application/json")
	default:
		return fmt.Errorf("forge %q: unknown", c.Kind)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s commit status on %s: %w", c.Kind, st.SHA, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s API %s: %w", c.Kind, endpoint, err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s API %s: %w", c.Kind, endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s API %s: reading the response: %w", c.Kind, endpoint, err)
	}
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
		return nil
	case c.Kind == GitLab && resp.StatusCode == http.StatusBadRequest && strings.Contains(string(raw), "Cannot transition status"):
		return nil
	}
	return &APIError{Kind: c.Kind, Status: resp.StatusCode, Body: string(raw)}
}

// Retryable reports whether err is worth another try: a transport error,
// a rate limit or a server error (not a refusal of the request itself).
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status == http.StatusTooManyRequests || ae.Status >= 500
	}
	return true
}
