package chainview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// DefaultTTL is how long the Handler serves a model before it asks Git
// whether the base branch moved.
const DefaultTTL = 5 * time.Second

// DefaultPullsTTL is how long the Handler shows a list of the forge's
// pull requests before it asks the forge again (its rate limits count
// every page and every request's reviews).
const DefaultPullsTTL = time.Minute

// csp allows the page's own stylesheet and nothing else: no script, no
// frame, no form.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Handler serves the pages of the repository, read-only: GET and HEAD
// only (405 otherwise). It reloads the model when the revision read or
// the tip of an attempt branch moved (asked at most every TTL), so that a
// page is never older than TTL plus one load.
type Handler struct {
	Repo *gitops.Repo
	// Options are passed to Load; Now is set on every load.
	Options Options
	// TTL is how long a model is served before Git is asked again
	// (default DefaultTTL).
	TTL time.Duration
	// Live, when set, is asked what runs at every refresh (every TTL):
	// the grid then shows drift. A failure is logged and the grid shows
	// none.
	Live func(ctx context.Context) (map[string]Live, error)
	// Log receives a load that failed (nil: silent).
	Log func(error)
	// APIToken, when set, is the bearer token the JSON API (APIPrefix)
	// requires (Argo CD's proxy extension adds it from argocd-secret).
	APIToken []byte
	// Applications, when set, reads the live Argo CD Application a request
	// names in Argocd-Application-Name: the API then answers such a
	// request about that Application's own app and environment only
	// (ApplicationApp), never about another one its query asks for.
	Applications ApplicationLookup
	// Fetch makes every refresh (every TTL, on a request) fetch the
	// repository's remote first, so that a clone nothing else updates
	// shows what the remote has.
	Fetch bool
	// Pulls, when set, lists the open pull/merge requests of Forge (its
	// name: github, gitlab, gitea) for the attempts in flight: asked at
	// most every PullsTTL (default DefaultPullsTTL, never more often than
	// TTL), each time within PullsTimeout (default DefaultPullsTimeout). A
	// failure is logged and the cells say the list is unavailable.
	Pulls        PullLister
	Forge        string
	PullsTTL     time.Duration
	PullsTimeout time.Duration

	mu    sync.Mutex
	model *Model
	// pulls is the last list of Pulls, asked at pullsAt; pullsBusy says a
	// list is being asked in the background, pullsNew that one came since
	// the site was made; siteOf is the model site was made of (before live
	// and pulls).
	pulls               *Pulls
	pullsAt             time.Time
	pullsBusy, pullsNew bool
	siteOf              *Model
	// key is what model was read from (readKey).
	key     string
	site    *Site
	checked time.Time
	// clock is the time of a request (nil: time.Now); tests move it.
	clock func() time.Time
}

// ServeHTTP serves /, /index.html, /style.css, /promotion/<id>.html,
// /app/<name>.html and the JSON API (api.go).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", csp)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	if strings.HasPrefix(r.URL.Path, APIPrefix) {
		h.serveAPI(w, r)
		return
	}
	if r.URL.Path == "/style.css" {
		hdr.Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(Stylesheet())
		return
	}
	site, err := h.current(r.Context())
	if err != nil {
		if h.Log != nil {
			h.Log(err)
		}
		http.Error(w, "cannot read the GitOps repository: see the server's log", http.StatusServiceUnavailable)
		return
	}
	var buf bytes.Buffer
	found, err := route(site, &buf, r.URL)
	var bad *badFilter
	switch {
	case errors.As(err, &bad):
		// The value is not echoed: a filter is app=<name>, env=<name>,
		// state=<state>.
		http.Error(w, "bad filter: want app=<app>, env=<environment>, state=<state or IN-FLIGHT>", http.StatusBadRequest)
	case err != nil:
		if h.Log != nil {
			h.Log(err)
		}
		http.Error(w, "cannot render the page: see the server's log", http.StatusInternalServerError)
	case !found:
		http.NotFound(w, r)
	default:
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Cache-Control", "no-cache")
		_, _ = w.Write(buf.Bytes())
	}
}

// badFilter is a query string that is not a Filter (400).
type badFilter struct{ err error }

func (b *badFilter) Error() string { return b.err.Error() }

// route writes the page of u's path; the index is filtered by u's query
// (ParseFilter).
func route(s *Site, w io.Writer, u *url.URL) (bool, error) {
	p := u.Path
	switch {
	case p == "/" || p == "/index.html":
		f, err := ParseFilter(u.Query())
		if err != nil {
			return false, &badFilter{err}
		}
		return true, s.IndexFiltered(w, f)
	case strings.HasPrefix(p, "/promotion/") && strings.HasSuffix(p, ".html"):
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/promotion/"), ".html")
		return s.Promotion(w, id)
	case strings.HasPrefix(p, "/app/") && strings.HasSuffix(p, ".html"):
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/app/"), ".html")
		if !promotion.ValidName(name) {
			return false, nil
		}
		return s.App(w, name)
	}
	return false, nil
}

// revision is the commit read: Options.Rev, else the base branch as the
// remote has it (after a fetch) when there is a remote.
func (h *Handler) revision(ctx context.Context) (string, error) {
	if h.Options.Rev != "" {
		return h.Repo.Resolve(ctx, h.Options.Rev)
	}
	return h.Repo.BaseRev(ctx)
}

// Preload reads the model before the first request (a large repository
// takes seconds: see docs/benchmarks.md).
func (h *Handler) Preload(ctx context.Context) error {
	_, err := h.current(ctx)
	return err
}

// current is the site of the revision read now: the cached one while TTL
// has not passed or the revision did not move, else a new load.
func (h *Handler) current(ctx context.Context) (*Site, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ttl := h.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := time.Now()
	if h.clock != nil {
		now = h.clock()
	}
	if h.site != nil && now.Sub(h.checked) < ttl {
		return h.site, nil
	}
	if h.Fetch {
		if err := h.Repo.Fetch(ctx); err != nil {
			return nil, err
		}
	}
	commit, err := h.revision(ctx)
	if err != nil {
		return nil, err
	}
	// The attempts in flight live on their branches: a push to one (an
	// approval) changes the grid as a merge does.
	branches, err := h.Repo.Branches(ctx, promotion.BranchPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("web view: listing the attempt branches: %w", err)
	}
	key := readKey(commit, branches)
	m := h.model
	if m != nil && h.key == key {
		// A window opens or closes, a freeze begins or ends, with no
		// commit: the cells' notes change with it.
		moved, err := closedMoved(ctx, h.Repo, m, now)
		if err != nil {
			return nil, err
		}
		if moved {
			m = nil
		}
	}
	if m == nil || h.key != key {
		opts := h.Options
		opts.Now = now
		if m, err = Load(ctx, h.Repo, opts); err != nil {
			return nil, err
		}
		h.model, h.key = m, key
	}
	base, asked := m, h.askPulls(ctx, now, ttl)
	if h.Live != nil {
		live, err := h.Live(ctx)
		if err != nil && h.Log != nil {
			h.Log(err)
		}
		m = m.WithLive(live)
	} else if !asked && h.site != nil && h.siteOf == base {
		h.checked = now
		return h.site, nil
	}
	if h.Pulls != nil {
		m = m.WithPulls(h.pulls)
	}
	site, err := NewSite(m)
	if err != nil {
		return nil, err
	}
	h.site, h.siteOf, h.checked = site, base, now
	return site, nil
}

// askPulls reports whether the forge's list changed since the site was
// made. The first list is asked here (h.mu held); after PullsTTL (never
// more often than ttl, the Git one) the next is asked in the background
// while the pages show the last one, so that a forge that hangs delays no
// request beyond the first.
func (h *Handler) askPulls(ctx context.Context, now time.Time, ttl time.Duration) bool {
	if h.Pulls == nil {
		return false
	}
	if h.pulls == nil {
		h.pulls, h.pullsAt = FetchPulls(ctx, h.Forge, h.Pulls, h.PullsTimeout, h.Log), now
		return true
	}
	every := h.PullsTTL
	if every <= 0 {
		every = DefaultPullsTTL
	}
	if !h.pullsBusy && now.Sub(h.pullsAt) >= max(every, ttl) {
		h.pullsBusy = true
		go func(ctx context.Context) {
			p := FetchPulls(ctx, h.Forge, h.Pulls, h.PullsTimeout, h.Log)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.pulls, h.pullsAt, h.pullsBusy, h.pullsNew = p, time.Now(), false, true
		}(context.WithoutCancel(ctx))
	}
	changed := h.pullsNew
	h.pullsNew = false
	return changed
}

// readKey names what a model is read from: the base commit and the tip
// of every attempt branch.
func readKey(commit string, branches map[string]string) string {
	names := make([]string, 0, len(branches))
	for b := range branches {
		names = append(names, b)
	}
	sort.Strings(names)
	var k strings.Builder
	k.WriteString(commit)
	for _, b := range names {
		k.WriteString(" " + b + "=" + branches[b])
	}
	return k.String()
}

// closedMoved reports whether the environments the policy at m.Rev closes
// at now differ from the ones m was read with (gate.Closed: which, by
// which field, until when): the model is then read again.
func closedMoved(ctx context.Context, repo *gitops.Repo, m *Model, now time.Time) (bool, error) {
	closed, err := gate.Closed(ctx, repo, m.Rev, now)
	if exitcode.Code(err) == exitcode.Invalid {
		return false, nil // the model lists the policy as a problem
	}
	if err != nil {
		return false, fmt.Errorf("web view: reading the windows at %s: %w", m.Rev, err)
	}
	same := func(a, b gate.ClosedEnvironment) bool {
		return a.Environment == b.Environment && a.Rule == b.Rule && a.Field == b.Field && a.Next.Equal(b.Next)
	}
	return !slices.EqualFunc(closed, m.Closed, same), nil
}
