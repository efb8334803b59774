// Package forge opens pull requests (GitHub, Gitea) and merge requests
// (GitLab) through each forge's REST API, with a token from the
// environment. The request and response shapes are the forges' documented
// ones (tested as contract tests against recorded shapes).
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
	"os"
	"strings"
	"time"
)

// Kind is a forge.
type Kind string

// The forges.
const (
	GitHub Kind = "github"
	GitLab Kind = "gitlab"
	Gitea  Kind = "gitea"
)

// TokenEnv is the variable the token is read from for each forge;
// THROUGHLINE_FORGE_TOKEN is read first for all of them.
var TokenEnv = map[Kind]string{GitHub: "GITHUB_TOKEN", GitLab: "GITLAB_TOKEN", Gitea: "GITEA_TOKEN"}

// DefaultURL is each forge's public API base.
var DefaultURL = map[Kind]string{GitHub: "https://api.github.com", GitLab: "https://gitlab.com", Gitea: ""}

// Client opens pull/merge requests on one repository.
type Client struct {
	Kind Kind
	// BaseURL is the API base (https://api.github.com, https://gitlab.com,
	// https://gitea.example.com).
	BaseURL string
	// Repo is owner/name (GitLab: the project path, groups included).
	Repo  string
	Token string
	HTTP  *http.Client
}

// New makes a client, reading the token from the environment.
func New(kind Kind, baseURL, repo string) (*Client, error) {
	if _, ok := TokenEnv[kind]; !ok {
		return nil, fmt.Errorf("forge %q: want github, gitlab or gitea", kind)
	}
	if baseURL == "" {
		baseURL = DefaultURL[kind]
	}
	if baseURL == "" {
		return nil, fmt.Errorf("forge %s: the API URL is required", kind)
	}
	if strings.Count(repo, "/") < 1 || strings.HasPrefix(repo, "/") || strings.HasSuffix(repo, "/") {
		return nil, fmt.Errorf("forge repository %q: want owner/name", repo)
	}
	tok := os.Getenv("THROUGHLINE_FORGE_TOKEN")
	if tok == "" {
		tok = os.Getenv(TokenEnv[kind])
	}
	if tok == "" {
		return nil, fmt.Errorf("forge %s: no token in THROUGHLINE_FORGE_TOKEN or %s", kind, TokenEnv[kind])
	}
	return &Client{Kind: kind, BaseURL: strings.TrimSuffix(baseURL, "/"), Repo: repo, Token: tok, HTTP: &http.Client{Timeout: 30 * time.Second}}, nil
}

// PullRequest is what to open.
type PullRequest struct {
	Title, Body string
	// Head is the branch with the change, Base the branch it merges into.
	Head, Base string
}

// Opened is an opened (or already open) pull/merge request.
type Opened struct {
	Number int
	URL    string
	// Existing is true when the forge said one was already open for Head.
	Existing bool
}

// APIError is a refusal by the forge.
type APIError struct {
	Kind   Kind
	Status int
	Body   string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s API: HTTP %d: %s", e.Kind, e.Status, strings.TrimSpace(e.Body))
}

// ErrAlreadyExists is wrapped when a request for the head branch is open.
var ErrAlreadyExists = errors.New("a pull request for this branch already exists")

// OpenPullRequest opens a pull request (merge request on GitLab).
func (c *Client) OpenPullRequest(ctx context.Context, pr PullRequest) (*Opened, error) {
	var (
		endpoint string
		body     any
		header   = http.Header{}
	)
	owner, name, _ := strings.Cut(c.Repo, "/")
	switch c.Kind {
	case GitHub:
		// POST /repos/{owner}/{repo}/pulls (docs.github.com/rest/pulls/pulls#create-a-pull-request)
		endpoint = fmt.Sprintf("%s/repos/%s/%s/pulls", c.BaseURL, url.PathEscape(owner), url.PathEscape(name))
		body = map[string]any{"title": pr.Title, "head": pr.Head, "base": pr.Base, "body": pr.Body}
		header.Set("Authorization", "Bearer "+c.Token)
		header.Set("Accept", "application/vnd.github+json")
		header.Set("X-GitHub-Api-Version", "2022-11-28")
	case GitLab:
		// POST /api/v4/projects/:id/merge_requests (docs.gitlab.com/api/merge_requests/#create-mr)
		endpoint = fmt.Sprintf("%s/api/v4/projects/%s/merge_requests", c.BaseURL, url.PathEscape(c.Repo))
		body = map[string]any{"source_branch": pr.Head, "target_branch": pr.Base, "title": pr.Title, "description": pr.Body, "remove_source_branch": true}
		header.Set("PRIVATE-TOKEN", c.Token)
	case Gitea:
		// POST /api/v1/repos/{owner}/{repo}/pulls (Gitea swagger: repoCreatePullRequest)
		endpoint = fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls", c.BaseURL, url.PathEscape(owner), url.PathEscape(name))
		body = map[string]any{"title": pr.Title, "head": pr.Head, "base": pr.Base, "body": pr.Body}
		header.Set("Authorization", "token "+c.Token)
		header.Set("Accept", "application/json")
	default:
		return nil, fmt.Errorf("forge %q: unknown", c.Kind)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s API %s: %w", c.Kind, endpoint, err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s API %s: %w", c.Kind, endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s API %s: reading the response: %w", c.Kind, endpoint, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		apiErr := &APIError{Kind: c.Kind, Status: resp.StatusCode, Body: string(raw)}
		if resp.StatusCode == http.StatusConflict ||
			(resp.StatusCode == http.StatusUnprocessableEntity && strings.Contains(string(raw), "already exists")) {
			return nil, fmt.Errorf("%w: %w", ErrAlreadyExists, apiErr)
		}
		return nil, apiErr
	}
	var out struct {
		Number  int    `json:"number"`
		IID     int    `json:"iid"`
		HTMLURL string `json:"html_url"`
		WebURL  string `json:"web_url"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s API %s: decoding the response: %w", c.Kind, endpoint, err)
	}
	o := &Opened{Number: out.Number, URL: out.HTMLURL}
	if c.Kind == GitLab {
		o.Number, o.URL = out.IID, out.WebURL
	}
	if o.URL == "" {
		return nil, fmt.Errorf("%s API %s: the response names no URL", c.Kind, endpoint)
	}
	return o, nil
}
