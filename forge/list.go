package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The bounds of ListPullRequests: at most ListPages pages of ListPerPage
// requests each (every page's body read up to 1 MiB, as every call's), and
// the reviews of at most ListReviewed requests, each in at most
// ReviewPages pages of ReviewsPerPage.
const (
	ListPages      = 5
	ListPerPage    = 50
	ListReviewed   = 50
	ReviewPages    = 10
	ReviewsPerPage = 100
)

// Pull is an open pull request (merge request on GitLab).
type Pull struct {
	Number int
	URL    string
	Title  string
	// Draft is a draft (GitLab: draft; Gitea: draft, or a WIP title).
	Draft bool
	// Head is the branch with the change, Base the branch it merges into.
	Head, Base string
	// Fork is true when Head is a branch of another repository than the
	// client's (a fork, or one the forge no longer names).
	Fork bool
	// Approvals is how many distinct reviewers approve it now (their last
	// review approves; GitLab: approved_by); -1 when not asked (beyond
	// ListReviewed, or its head is outside the prefix listed) or when its
	// reviews fill more than ReviewPages pages.
	Approvals int
}

// PullList is the open requests of a repository.
type PullList struct {
	Pulls []Pull
	// Truncated is true when the forge had more than ListPages pages.
	Truncated bool
}

// ListPullRequests lists the open pull requests (merge requests on
// GitLab) of c's repository, each page bounded, with the approvals of
// those whose head branch starts with headPrefix and is c's own (not a
// fork's):
//
//   - GitHub: GET /repos/{owner}/{repo}/pulls?state=open&per_page=&page=
//     (docs.github.com/rest/pulls/pulls#list-pull-requests), then GET
//     /repos/{owner}/{repo}/pulls/{number}/reviews?per_page=100&page=
//     (docs.github.com/rest/pulls/reviews#list-reviews-for-a-pull-request).
//   - GitLab: GET /api/v4/projects/:id/merge_requests?state=opened&per_page=&page=
//     (docs.gitlab.com/api/merge_requests/#list-project-merge-requests), then
//     GET /api/v4/projects/:id/merge_requests/:iid/approvals
//     (docs.gitlab.com/api/merge_request_approvals/).
//   - Gitea: GET /api/v1/repos/{owner}/{repo}/pulls?state=open&limit=&page=
//     (Gitea swagger: repoListPullRequests), then GET
//     /api/v1/repos/{owner}/{repo}/pulls/{index}/reviews?limit=&page=
//     (repoListPullReviews). Gitea answers at most its MAX_RESPONSE_ITEMS
//     a page, so its lists end at an empty page, not a short one.
//
// Every page of a request's reviews is read (a reviewer's verdict is
// their last review), at most ReviewPages.
func (c *Client) ListPullRequests(ctx context.Context, headPrefix string) (*PullList, error) {
	owner, name, _ := strings.Cut(c.Repo, "/")
	var list func(page int) string
	switch c.Kind {
	case GitHub:
		list = func(page int) string {
			return fmt.Sprintf("%s/repos/%s/%s/pulls?state=open&per_page=%d&page=%d", c.BaseURL, url.PathEscape(owner), url.PathEscape(name),
				ListPerPage, page)
		}
	case GitLab:
		list = func(page int) string {
			return fmt.Sprintf("%s/api/v4/projects/%s/merge_requests?state=opened&per_page=%d&page=%d", c.BaseURL, url.PathEscape(c.Repo),
				ListPerPage, page)
		}
	case Gitea:
		list = func(page int) string {
			return fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls?state=open&limit=%d&page=%d", c.BaseURL, url.PathEscape(owner), url.PathEscape(name),
				ListPerPage, page)
		}
	default:
		return nil, fmt.Errorf("forge %q: unknown", c.Kind)
	}
	out := &PullList{}
	for page := 1; ; page++ {
		if page > ListPages {
			out.Truncated = true
			break
		}
		endpoint := list(page)
		raw, err := c.call(ctx, http.MethodGet, endpoint, nil)
		if err != nil {
			return nil, err
		}
		var got []listedPull
		if err := json.Unmarshal(raw, &got); err != nil {
			return nil, fmt.Errorf("%s API %s: decoding the response: %w", c.Kind, endpoint, err)
		}
		for _, p := range got {
			out.Pulls = append(out.Pulls, p.pull(c))
		}
		if lastPage(c.Kind, len(got), ListPerPage) {
			break
		}
	}
	asked := 0
	for i := range out.Pulls {
		p := &out.Pulls[i]
		p.Approvals = -1
		if p.Fork || !strings.HasPrefix(p.Head, headPrefix) || p.Number <= 0 || asked >= ListReviewed {
			continue
		}
		asked++
		n, err := c.approvals(ctx, p.Number)
		if err != nil {
			return nil, err
		}
		p.Approvals = n
	}
	return out, nil
}

// listedPull is one element of a list answer, the three forges' fields.
type listedPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Title   string `json:"title"`
	Draft   bool   `json:"draft"`
	Head    struct {
		Ref  string `json:"ref"`
		Repo *struct {
			FullName string `json:"full_name"`
		} `json:"repo"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
	// GitLab's.
	IID             int    `json:"iid"`
	WebURL          string `json:"web_url"`
	SourceBranch    string `json:"source_branch"`
	TargetBranch    string `json:"target_branch"`
	SourceProjectID int    `json:"source_project_id"`
	TargetProjectID int    `json:"target_project_id"`
}

func (p listedPull) pull(c *Client) Pull {
	if c.Kind == GitLab {
		return Pull{Number: p.IID, URL: p.WebURL, Title: p.Title, Draft: p.Draft, Head: p.SourceBranch, Base: p.TargetBranch,
			Fork: p.SourceProjectID != p.TargetProjectID}
	}
	out := Pull{Number: p.Number, URL: p.HTMLURL, Title: p.Title, Draft: p.Draft, Head: p.Head.Ref, Base: p.Base.Ref,
		Fork: p.Head.Repo == nil || !strings.EqualFold(p.Head.Repo.FullName, c.Repo)}
	if c.Kind == Gitea && !out.Draft {
		t := strings.ToUpper(strings.TrimSpace(p.Title))
		out.Draft = strings.HasPrefix(t, "WIP:") || strings.HasPrefix(t, "[WIP]") // Gitea's default WIP prefixes
	}
	return out
}

// lastPage reports whether a page of n items, of perPage asked, is the
// last one. GitHub and GitLab answer as many as asked up to 100, so a
// short page is the last; Gitea answers at most its MAX_RESPONSE_ITEMS,
// which may be fewer than asked: only an empty page ends its list.
func lastPage(k Kind, n, perPage int) bool {
	if k == Gitea {
		return n == 0
	}
	return n < perPage
}

// review is one review of a request (GitHub's and Gitea's fields).
type review struct {
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	State     string `json:"state"`
	Dismissed bool   `json:"dismissed"`
}

// approvals is how many distinct reviewers approve request n now; -1
// when its reviews fill more than ReviewPages pages (a count read from
// part of them could be wrong both ways).
func (c *Client) approvals(ctx context.Context, n int) (int, error) {
	owner, name, _ := strings.Cut(c.Repo, "/")
	var reviews func(page int) string
	switch c.Kind {
	case GitHub:
		reviews = func(page int) string {
			return fmt.Sprintf("%s/repos/%s/%s/pulls/%d/reviews?per_page=%d&page=%d", c.BaseURL, url.PathEscape(owner), url.PathEscape(name), n,
				ReviewsPerPage, page)
		}
	case GitLab: // one answer, not paged
		return c.gitlabApprovals(ctx, n)
	case Gitea:
		reviews = func(page int) string {
			return fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls/%d/reviews?limit=%d&page=%d", c.BaseURL, url.PathEscape(owner), url.PathEscape(name), n,
				ReviewsPerPage, page)
		}
	default:
		return 0, fmt.Errorf("forge %q: unknown", c.Kind)
	}
	var all []review
	for page := 1; ; page++ {
		if page > ReviewPages {
			return -1, nil
		}
		endpoint := reviews(page)
		raw, err := c.call(ctx, http.MethodGet, endpoint, nil)
		if err != nil {
			return 0, err
		}
		var got []review
		if err := json.Unmarshal(raw, &got); err != nil {
			return 0, fmt.Errorf("%s API %s: decoding the response: %w", c.Kind, endpoint, err)
		}
		all = append(all, got...)
		if lastPage(c.Kind, len(got), ReviewsPerPage) {
			break
		}
	}
	return approvedBy(all), nil
}

// gitlabApprovals is how many distinct users approve merge request n.
func (c *Client) gitlabApprovals(ctx context.Context, n int) (int, error) {
	endpoint := fmt.Sprintf("%s/api/v4/projects/%s/merge_requests/%s/approvals", c.BaseURL, url.PathEscape(c.Repo), strconv.Itoa(n))
	raw, err := c.call(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return 0, err
	}
	var a struct {
		ApprovedBy []struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
		} `json:"approved_by"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return 0, fmt.Errorf("%s API %s: decoding the response: %w", c.Kind, endpoint, err)
	}
	seen := map[string]bool{}
	for _, u := range a.ApprovedBy {
		seen[u.User.Username] = true
	}
	return len(seen), nil
}

// approvedBy is how many distinct reviewers approve, given the reviews
// oldest first: a reviewer's last approving or rejecting review is their
// verdict (a comment changes nothing, a dismissal withdraws it).
func approvedBy(reviews []review) int {
	last := map[string]string{}
	for _, r := range reviews {
		switch st := strings.ToUpper(r.State); {
		case r.Dismissed || st == "DISMISSED":
			delete(last, r.User.Login)
		case st == "APPROVED" || st == "CHANGES_REQUESTED" || st == "REQUEST_CHANGES":
			last[r.User.Login] = st
		}
	}
	approved := 0
	for _, st := range last {
		if st == "APPROVED" {
			approved++
		}
	}
	return approved
}
