package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ClosePullRequests closes the open pull requests (merge requests on
// GitLab) whose head is branch, and returns their numbers (none open: an
// empty list). A finished attempt's request is closed so that it is not
// reviewed or merged by mistake.
//
//   - GitHub: GET /repos/{owner}/{repo}/pulls?state=open&head={owner}:{branch},
//     then PATCH /repos/{owner}/{repo}/pulls/{number} {"state":"closed"}.
//   - GitLab: GET /api/v4/projects/:id/merge_requests?state=opened&source_branch={branch},
//     then PUT /api/v4/projects/:id/merge_requests/:iid {"state_event":"close"}.
//   - Gitea: GET /api/v1/repos/{owner}/{repo}/pulls?state=open (filtered by
//     head.ref), then PATCH /api/v1/repos/{owner}/{repo}/pulls/{index} {"state":"closed"}.
func (c *Client) ClosePullRequests(ctx context.Context, branch string) ([]int, error) {
	owner, name, _ := strings.Cut(c.Repo, "/")
	var list, prefix string
	var closeBody any
	closeMethod := http.MethodPatch
	switch c.Kind {
	case GitHub:
		list = fmt.Sprintf("%s/repos/%s/%s/pulls?state=open&head=%s", c.BaseURL, url.PathEscape(owner), url.PathEscape(name),
			url.QueryEscape(owner+":"+branch))
		prefix = fmt.Sprintf("%s/repos/%s/%s/pulls/", c.BaseURL, url.PathEscape(owner), url.PathEscape(name))
		closeBody = map[string]string{"state": "closed"}
	case GitLab:
		list = fmt.Sprintf("%s/api/v4/projects/%s/merge_requests?state=opened&source_branch=%s",
			c.BaseURL, url.PathEscape(c.Repo), url.QueryEscape(branch))
		prefix, closeBody, closeMethod = fmt.Sprintf("%s/api/v4/projects/%s/merge_requests/", c.BaseURL, url.PathEscape(c.Repo)),
			map[string]string{"state_event": "close"}, http.MethodPut
	case Gitea:
		list = fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls?state=open", c.BaseURL, url.PathEscape(owner), url.PathEscape(name))
		prefix = fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls/", c.BaseURL, url.PathEscape(owner), url.PathEscape(name))
		closeBody = map[string]string{"state": "closed"}
	default:
		return nil, fmt.Errorf("forge %q: unknown", c.Kind)
	}
	raw, err := c.call(ctx, http.MethodGet, list, nil)
	if err != nil {
		return nil, err
	}
	var open []struct {
		Number       int    `json:"number"`
		IID          int    `json:"iid"`
		SourceBranch string `json:"source_branch"`
		Head         struct {
			Ref string `json:"ref"`
		} `json:"head"`
	}
	if err := json.Unmarshal(raw, &open); err != nil {
		return nil, fmt.Errorf("%s API %s: decoding the response: %w", c.Kind, list, err)
	}
	var closed []int
	for _, pr := range open {
		n, head := pr.Number, pr.Head.Ref
		if c.Kind == GitLab {
			n, head = pr.IID, pr.SourceBranch
		}
		if head != branch || n <= 0 {
			continue
		}
		if _, err := c.call(ctx, closeMethod, prefix+strconv.Itoa(n), closeBody); err != nil {
			return closed, err
		}
		closed = append(closed, n)
	}
	return closed, nil
}

// call sends one authenticated request (body as JSON when not nil) and
// returns the response body of a 2xx answer, else an *APIError.
func (c *Client) call(ctx context.Context, method, endpoint string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, endpoint, rd)
	if err != nil {
		return nil, fmt.Errorf("%s API %s: %w", c.Kind, endpoint, err)
	}
	switch c.Kind {
	case GitHub:
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	case GitLab:
		req.Header.Set("PRIVATE-TOKEN", c.Token)
	case Gitea:
		req.Header.Set("Authorization", "token "+c.Token)
		req.Header.Set("Accept", "application/json")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s API %s: %w", c.Kind, endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s API %s: reading the response: %w", c.Kind, endpoint, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &APIError{Kind: c.Kind, Status: resp.StatusCode, Body: string(raw)}
	}
	return raw, nil
}
