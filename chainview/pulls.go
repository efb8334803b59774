package chainview

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/promotion"
)

// PullRequest is an open pull request (merge request on GitLab) as the
// forge listed it.
type PullRequest struct {
	Number int
	// URL is the request's page on the forge (a link only when http or
	// https).
	URL   string
	Title string
	Draft bool
	// Head is its branch, Base the branch it merges into; Fork says Head
	// is a branch of another repository.
	Head, Base string
	Fork       bool
	// Approvals is how many reviewers approve it on the forge (-1: the
	// forge was not asked).
	Approvals int
}

// Pulls is what the forge answered when the view was read: its open
// requests, or why it could not be asked.
type Pulls struct {
	// Forge names it (github, gitlab, gitea).
	Forge string
	List  []PullRequest
	// Unavailable says why there is no list ("" when there is one); the
	// cells with attempts in flight say it.
	Unavailable string
	// Truncated says the forge had more open requests than were read.
	Truncated bool
}

// PullLister lists the open requests of the repository's forge.
type PullLister func(ctx context.Context) (*Pulls, error)

// DefaultPullsTimeout bounds one listing of the forge's requests: a forge
// that does not answer makes the cells say so, the page renders.
const DefaultPullsTimeout = 10 * time.Second

// ForgeLister lists c's open requests for the view: the attempt branches'
// approvals are asked, the rest listed. The view holds c but never shows
// its token: a failure says only the forge's HTTP status or that it did
// not answer (the full error goes to the caller's log).
func ForgeLister(c *forge.Client) PullLister {
	return func(ctx context.Context) (*Pulls, error) {
		l, err := c.ListPullRequests(ctx, promotion.BranchPrefix)
		if err != nil {
			return nil, &redacted{err: err, secret: c.Token}
		}
		out := &Pulls{Forge: string(c.Kind), Truncated: l.Truncated}
		for _, p := range l.Pulls {
			out.List = append(out.List, PullRequest(p))
		}
		return out, nil
	}
}

// FetchPulls asks list within timeout (DefaultPullsTimeout when 0). A
// failure is not an error of the view: the Pulls say it is unavailable
// (in words that hold no answer of the forge and no credential), and
// logf, when set, gets the error.
func FetchPulls(ctx context.Context, forgeName string, list PullLister, timeout time.Duration, logf func(error)) *Pulls {
	if timeout <= 0 {
		timeout = DefaultPullsTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := list(ctx)
	if err == nil && p != nil {
		return p
	}
	if err == nil {
		err = errors.New("no answer")
	}
	if logf != nil {
		logf(fmt.Errorf("web view: listing the pull requests of %s: %w", forgeName, err))
	}
	var ae *forge.APIError
	why := "the forge could not be reached"
	switch {
	case errors.As(err, &ae):
		why = fmt.Sprintf("the forge answered HTTP %d", ae.Status)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		why = "the forge did not answer within " + timeout.String()
	}
	return &Pulls{Forge: forgeName, Unavailable: "pull request list unavailable: " + why}
}

// OtherPull is an open request that belongs to no attempt in flight.
type OtherPull struct {
	*PullRequest
	// Note says why a request whose head is named like an attempt branch
	// is no attempt's ("" for any other request).
	Note string
}

// WithPulls is a copy of m (its apps, cells and attempts in flight
// copied, the chains shared) whose attempts in flight carry their open
// request. A request belongs to an attempt only when its head is exactly
// the attempt's own branch (promotion.AttemptKey.Branch of the attempt
// read from that branch), the branch the attempt is on, in the
// repository itself (not a fork) and it merges into the base branch read:
// a branch that only looks like an attempt branch is never attached. The
// other requests are listed apart (OtherPulls), those named like attempt
// branches with why they are none: nothing the forge has open is hidden.
func (m *Model) WithPulls(p *Pulls) *Model {
	c := *m
	c.Pulls = p
	c.OtherPulls = nil
	attached := map[*PullRequest]bool{}
	c.Apps = make([]*App, len(m.Apps))
	for i, a := range m.Apps {
		ac := *a
		ac.Cells = make([]*Cell, len(a.Cells))
		for j, cell := range a.Cells {
			cc := *cell
			cc.InFlight = make([]Flight, len(cell.InFlight))
			copy(cc.InFlight, cell.InFlight)
			cc.PullsUnavailable = ""
			if len(cc.InFlight) > 0 && p != nil && p.Unavailable != "" {
				cc.PullsUnavailable = p.Unavailable
			}
			for k := range cc.InFlight {
				cc.InFlight[k].Pull = p.find(&cc, cc.InFlight[k], m.Base)
				attached[cc.InFlight[k].Pull] = true
			}
			ac.Cells[j] = &cc
		}
		c.Apps[i] = &ac
	}
	c.OtherPulls = p.others(attached, &c)
	return &c
}

// others are the requests of p not attached, in the forge's order, with
// why those named like attempt branches belong to no attempt in flight
// in m (nil: no list).
func (p *Pulls) others(attached map[*PullRequest]bool, m *Model) []OtherPull {
	if p == nil || p.Unavailable != "" {
		return nil
	}
	var out []OtherPull
	for i := range p.List {
		pr := &p.List[i]
		if attached[pr] {
			continue
		}
		o := OtherPull{PullRequest: pr}
		switch {
		case !strings.HasPrefix(pr.Head, promotion.BranchPrefix):
		case pr.Fork:
			o.Note = "from another repository: its branch is named like an attempt branch, but attempts are only on the repository's own branches"
		case pr.Base != m.Base:
			o.Note = fmt.Sprintf("named like an attempt branch, but merges into %s, not %s", pr.Base, m.Base)
		default:
			o.Note = fmt.Sprintf("named like an attempt branch, but no attempt in flight at %s is on it under its own name", short(m.Rev))
		}
		out = append(out, o)
	}
	return out
}

// LikeAttempts counts the requests of list named like attempt branches.
func LikeAttempts(list []OtherPull) int {
	n := 0
	for _, o := range list {
		if o.Note != "" {
			n++
		}
	}
	return n
}

// Noun is "pull request" (GitLab: "merge request"), plural unless n is 1.
func (p *Pulls) Noun(n int) string {
	s := "pull request"
	if p != nil && strings.EqualFold(p.Forge, string(forge.GitLab)) {
		s = "merge request"
	}
	if n != 1 {
		s += "s"
	}
	return s
}

// find is the open request of f, an attempt in flight in cell c (nil:
// none, or no list).
func (p *Pulls) find(c *Cell, f Flight, base string) *PullRequest {
	if p == nil || p.Unavailable != "" || f.App != c.App || f.Environment != c.Environment {
		return nil
	}
	own := promotion.AttemptKey{App: f.App, Digest: f.Digest, Environment: f.Environment, Attempt: f.Attempt}.Branch()
	if f.Ref != own {
		return nil
	}
	for i := range p.List {
		pr := &p.List[i]
		if pr.Head == own && !pr.Fork && pr.Base == base && pr.Number > 0 {
			return pr
		}
	}
	return nil
}

// Link is the request's URL when it is an http or https one ("" else).
func (pr *PullRequest) Link() string {
	u, err := url.Parse(pr.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.String()
}

// Review says the request's state and review in a few words: "draft",
// "open, 1 approval".
func (pr *PullRequest) Review() string {
	s := "open"
	if pr.Draft {
		s = "draft"
	}
	switch {
	case pr.Approvals == 1:
		s += ", 1 approval on the forge"
	case pr.Approvals >= 0:
		s += fmt.Sprintf(", %d approvals on the forge", pr.Approvals)
	}
	return s
}

// Waits says what the request waits on, beside its attempt's record: a
// draft waits to be marked ready for review, an open one on its review
// and merge ("" when the record says it all).
func (pr *PullRequest) Waits() string {
	if pr.Draft {
		return "waits on being marked ready for review"
	}
	return ""
}

// Label is "PR #12" (GitLab: "MR !12").
func (p *Pulls) Label(pr *PullRequest) string {
	if p != nil && strings.EqualFold(p.Forge, string(forge.GitLab)) {
		return fmt.Sprintf("MR !%d", pr.Number)
	}
	return fmt.Sprintf("PR #%d", pr.Number)
}

// redacted is an error whose text never holds secret (a forge may echo
// the request's headers in its answer, which the error carries).
type redacted struct {
	err    error
	secret string
}

func (r *redacted) Error() string {
	if r.secret == "" {
		return r.err.Error()
	}
	return strings.ReplaceAll(r.err.Error(), r.secret, "[redacted]")
}

func (r *redacted) Unwrap() error { return r.err }
