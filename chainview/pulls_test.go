package chainview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

// lookAlike commits, on a branch whose name only looks like an attempt
// branch (throughline/promote/api-production-2: not the attempt's own
// name), attempt 2 of api in production, VERIFIED: an attempt in flight
// whose branch is not promotion.AttemptKey.Branch.
func lookAlike(t *testing.T, f *chainfixture.Repo) string {
	t.Helper()
	rec, err := promotion.NewCandidate("api", 2, promotion.Artifact{Image: "ghcr.io/throughline-dev/api:1.0.0@" + apiDigest, Digest: apiDigest,
		SourceCommit: strings.Repeat("9", 40)},
		promotion.Target{Environment: "production", Path: "apps/api/overlays/production", Cluster: "prod-eu-1",
			RenderedHash: "sha256:" + strings.Repeat("8", 64), BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"},
		f.Next(), "hand")
	must(t, err)
	must(t, f.FromDev(rec, f.Next()))
	data, err := rec.Marshal()
	must(t, err)
	const branch = promotion.BranchPrefix + "api-production-2"
	f.Git("checkout", "-q", "-b", branch)
	f.Commit("api attempt 2 on a look-alike branch", map[string][]byte{promotion.RecordPath("api", "production"): data})
	f.Git("checkout", "-q", "main")
	return branch
}

// hostilePulls are the forge's open requests around the attempt on
// branch (api in production, attempt 1) and the look-alike attempt 2:
// only #9 is the attempt's own; its title is markup.
func hostilePulls(branch, lookAlikeBranch string) *Pulls {
	own2 := promotion.AttemptKey{App: "api", Digest: apiDigest, Environment: "production", Attempt: 2}.Branch()
	webLike := promotion.AttemptKey{App: "web", Digest: apiDigest, Environment: "production", Attempt: 1}.Branch()
	return &Pulls{Forge: "github", List: []PullRequest{
		{Number: 1, URL: "https://forge.example/pr/1", Title: "from a fork", Head: branch, Base: "main", Fork: true, Approvals: -1},
		{Number: 2, URL: "https://forge.example/pr/2", Title: "into another branch", Head: branch, Base: "release", Approvals: 3},
		{Number: 3, URL: "https://forge.example/pr/3", Title: "a longer name", Head: branch + "x", Base: "main", Approvals: 3},
		{Number: 4, URL: "https://forge.example/pr/4", Title: "web's name", Head: webLike, Base: "main", Approvals: 3},
		{Number: 6, URL: "https://forge.example/pr/6", Title: "look-alike's branch", Head: lookAlikeBranch, Base: "main", Approvals: 3},
		{Number: 7, URL: "https://forge.example/pr/7", Title: "attempt 2's own name, no such branch", Head: own2, Base: "main", Approvals: 3},
		{Number: 9, URL: "https://forge.example/pr/9", Title: `<script>alert(1)</script><b onmouseover="x">promote api</b>`, Head: branch,
			Base: "main", Approvals: 1},
	}}
}

// TestPullsAttachOnlyToTheirAttempt: a request is shown in a cell only
// when its head is the attempt's own branch, in the repository, into the
// base branch: a fork's branch of the same name, a request into another
// branch, a longer name, another app's name, a look-alike branch's
// attempt and an attempt's own name with no such branch are never
// attached; the title's markup is escaped; the grid and the pipeline
// show the request with its link, state and approvals.
func TestPullsAttachOnlyToTheirAttempt(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	branch := f.AwaitApprovals()
	alike := lookAlike(t, f)
	m, err := Load(context.Background(), f.Repo, Options{Now: chainfixture.Now})
	must(t, err)
	m = m.WithPulls(hostilePulls(branch, alike))
	var flights []Flight
	for _, a := range m.Apps {
		for _, c := range a.Cells {
			if c.App == "api" && c.Environment == "production" {
				flights = c.InFlight
				continue
			}
			for _, fl := range c.InFlight {
				if fl.Pull != nil {
					t.Errorf("%s in %s: request #%d attached", c.App, c.Environment, fl.Pull.Number)
				}
			}
		}
	}
	if len(flights) != 2 {
		t.Fatalf("api in production: %d attempts in flight, want 2 (%s and %s)", len(flights), branch, alike)
	}
	for _, fl := range flights {
		switch {
		case fl.Ref == branch && (fl.Pull == nil || fl.Pull.Number != 9):
			t.Errorf("%s: request %+v, want #9", fl.Ref, fl.Pull)
		case fl.Ref == alike && fl.Pull != nil:
			t.Errorf("the look-alike branch %s got request #%d", fl.Ref, fl.Pull.Number)
		}
	}
	s, err := NewSite(m)
	must(t, err)
	files, err := s.Files(context.Background())
	must(t, err)
	golden.Compare(t, "testdata/grid-pulls.html", files["index.html"])
	if bytes.Contains(files["index.html"], []byte("more open requests")) {
		t.Error("a complete list is said to be truncated")
	}
	cut := hostilePulls(branch, alike)
	cut.Truncated = true
	ts, err := NewSite(m.WithPulls(cut))
	must(t, err)
	var idx bytes.Buffer
	must(t, ts.Index(&idx))
	if !strings.Contains(idx.String(), "The forge has more open requests than were read: some attempts may show none.") {
		t.Error("a truncated list is not said")
	}
	for _, page := range []string{"index.html", "app/api.html"} {
		got := string(files[page])
		for _, want := range []string{`<a href="https://forge.example/pr/9">PR #9</a> (open, 1 approval on the forge)`,
			"&lt;script&gt;alert(1)&lt;/script&gt;&lt;b onmouseover=&#34;x&#34;&gt;promote api&lt;/b&gt;"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s does not say %q", page, want)
			}
		}
		if page == "index.html" { // the others are listed apart, never in a cell
			i, j := strings.Index(got, `<table class="grid">`), strings.LastIndex(got, "</table>")
			if i < 0 || j < i {
				t.Fatalf("index.html has no grid")
			}
			got = got[i:j]
		}
		for _, bad := range []string{"<script", "<b onmouseover", "pr/1\"", "pr/2\"", "pr/3\"", "pr/4\"", "pr/6\"", "pr/7\""} {
			if strings.Contains(got, bad) {
				t.Errorf("%s contains %q", page, bad)
			}
		}
	}
	// Every request not attached is listed apart, each named like an
	// attempt branch with why it is none.
	var others []string
	for _, o := range m.OtherPulls {
		others = append(others, fmt.Sprintf("#%d %s", o.Number, o.Note))
	}
	want := []string{
		"#1 from another repository: its branch is named like an attempt branch, but attempts are only on the repository's own branches",
		"#2 named like an attempt branch, but merges into release, not main",
		"#3 named like an attempt branch, but no attempt in flight at " + m.Rev[:12] + " is on it under its own name",
		"#4 named like an attempt branch, but no attempt in flight at " + m.Rev[:12] + " is on it under its own name",
		"#6 named like an attempt branch, but no attempt in flight at " + m.Rev[:12] + " is on it under its own name",
		"#7 named like an attempt branch, but no attempt in flight at " + m.Rev[:12] + " is on it under its own name",
	}
	if strings.Join(others, "\n") != strings.Join(want, "\n") {
		t.Errorf("the other requests:\n%s\nwant\n%s", strings.Join(others, "\n"), strings.Join(want, "\n"))
	}
	if !bytes.Contains(files["index.html"], []byte(`<details class="other-pulls" open><summary>6 other open pull requests, attached to no attempt in flight (6 named like an attempt branch)`)) {
		t.Error("index.html does not list the other requests, open")
	}
}

// TestPullLinks: only an http(s) URL is a link; a draft says what it
// waits on; GitLab's are MRs.
func TestPullLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string
	}{
		{"https://github.com/a/b/pull/1", "https://github.com/a/b/pull/1"},
		{"javascript:alert(1)", ""},
		{"data:text/html,<script>", ""},
		{"//evil.example/x", ""},
		{"", ""},
	} {
		if got := (&PullRequest{URL: tc.url}).Link(); got != tc.want {
			t.Errorf("Link(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
	d := &PullRequest{Number: 4, Draft: true, Approvals: -1}
	if d.Review() != "draft" || d.Waits() != "waits on being marked ready for review" || (&Pulls{Forge: "gitlab"}).Label(d) != "MR !4" {
		t.Errorf("draft: %q %q", d.Review(), d.Waits())
	}
}

// forgeServer is a forge answering the list with answer (a status, or
// hanging until the test ends when status is 0), counting the lists.
func forgeServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/pulls") {
			n.Add(1)
		}
		if status == 0 {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, strings.ReplaceAll(body, "$AUTH", r.Header.Get("Authorization")))
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv, &n
}

const secretToken = "tok-SECRET-5f1d"

// TestHandlerPullsUnavailable: a forge that answers 500 (echoing the
// token in its body), or never answers, does not break the page: the
// grid, the pipeline and the API render, the cell with an attempt in
// flight says the request list is unavailable, and no page, API answer
// or log line holds the token.
func TestHandlerPullsUnavailable(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	f.AwaitApprovals()
	for _, tc := range []struct {
		name   string
		status int
		want   string
	}{
		{"500", http.StatusInternalServerError, "pull request list unavailable: the forge answered HTTP 500"},
		{"hangs", 0, "pull request list unavailable: the forge did not answer within 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, _ := forgeServer(t, tc.status, `{"message":"boom, your header was $AUTH"}`)
			c := &forge.Client{Kind: forge.GitHub, BaseURL: fs.URL, Repo: "platform/gitops-env", Token: secretToken, HTTP: fs.Client()}
			var mu sync.Mutex
			var logged []string
			h := &Handler{Repo: f.Repo, Pulls: ForgeLister(c), Forge: "github", PullsTimeout: 300 * time.Millisecond,
				Log: func(err error) { mu.Lock(); logged = append(logged, err.Error()); mu.Unlock() }}
			srv := httptest.NewServer(h)
			defer srv.Close()
			start := time.Now()
			for _, p := range []struct{ path, want string }{
				{"/", tc.want}, {"/", `href="promotion/checkout-production-4b7e2a91c3d5-1.html"`}, {"/app/api.html", tc.want},
				{"/promotion/checkout-production-4b7e2a91c3d5-1.html", "production runtime evidence"},
				{APIApplication + "?app=api&env=production", `"pullRequestsUnavailable": "` + tc.want},
			} {
				resp, err := http.Get(srv.URL + p.path)
				must(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), p.want) {
					t.Errorf("GET %s: %d, want 200 with %q:\n%.400s", p.path, resp.StatusCode, p.want, body)
				}
				if strings.Contains(string(body), secretToken) {
					t.Errorf("GET %s shows the token", p.path)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("5 pages took %s: the forge was asked per request", d)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(logged) == 0 {
				t.Error("the failure is not logged")
			}
			for _, l := range logged {
				if strings.Contains(l, secretToken) {
					t.Errorf("the log holds the token: %s", l)
				}
			}
		})
	}
}

// TestHandlerPullsRefreshOnTTL: the forge is asked once per PullsTTL,
// not per request, and the served cell shows its request.
func TestHandlerPullsRefreshOnTTL(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	branch := f.AwaitApprovals()
	list, err := json.Marshal([]map[string]any{{"number": 9, "html_url": "https://forge.example/pr/9", "title": "promote api",
		"head": map[string]any{"ref": branch, "repo": map[string]string{"full_name": "platform/gitops-env"}}, "base": map[string]string{"ref": "main"}}})
	must(t, err)
	var n atomic.Int32
	fs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/reviews") {
			_, _ = io.WriteString(w, `[{"user":{"login":"alice"},"state":"APPROVED"}]`)
			return
		}
		n.Add(1)
		_, _ = w.Write(list)
	}))
	defer fs.Close()
	c := &forge.Client{Kind: forge.GitHub, BaseURL: fs.URL, Repo: "platform/gitops-env", Token: secretToken, HTTP: fs.Client()}
	h := &Handler{Repo: f.Repo, TTL: time.Nanosecond, Pulls: ForgeLister(c), Forge: "github", PullsTTL: time.Hour}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for range 5 {
		resp, err := http.Get(srv.URL + "/")
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(body, []byte(`<a href="https://forge.example/pr/9">PR #9</a> (open, 1 approval on the forge)`)) {
			t.Fatalf("the served grid does not show PR #9:\n%s", body)
		}
	}
	var st AppStatus
	req, err := http.NewRequest("GET", srv.URL+APIApplication+"?app=api&env=production", nil)
	must(t, err)
	if code := getJSON(t, req, &st); code != 200 || len(st.InFlight) != 1 || st.InFlight[0].PullRequest == nil ||
		st.InFlight[0].PullRequest.Number != 9 || st.InFlight[0].PullRequest.Approvals == nil || *st.InFlight[0].PullRequest.Approvals != 1 {
		t.Fatalf("API: %d %+v", code, st.InFlight)
	}
	if p := st.Pipeline[len(st.Pipeline)-1]; !strings.HasSuffix(p.Status, ", PR #9 open, 1 approval on the forge") {
		t.Errorf("API pipeline's production: %q, want its request", p.Status)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("the forge was listed %d times for 6 requests within PullsTTL, want once", got)
	}
}

// TestHandlerPullsInBackground: once the first list came, the next ones
// are asked in the background: a forge that starts hanging delays no
// request (the pages keep the last list), and when it times out the
// cells say the list is unavailable.
func TestHandlerPullsInBackground(t *testing.T) {
	t.Parallel()
	f := chainfixture.New(t, example)
	branch := f.AwaitApprovals()
	var lists atomic.Int32
	done := make(chan struct{})
	fs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/reviews") {
			_, _ = io.WriteString(w, `[]`)
			return
		}
		if lists.Add(1) > 1 {
			select { // hangs from the second list on
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		_, _ = io.WriteString(w, `[{"number":9,"html_url":"https://forge.example/pr/9","title":"promote api","head":{"ref":"`+branch+
			`","repo":{"full_name":"platform/gitops-env"}},"base":{"ref":"main"}}]`)
	}))
	defer fs.Close()
	defer close(done)
	c := &forge.Client{Kind: forge.GitHub, BaseURL: fs.URL, Repo: "platform/gitops-env", Token: secretToken, HTTP: fs.Client()}
	const timeout = 3 * time.Second
	srv := httptest.NewServer(&Handler{Repo: f.Repo, TTL: time.Nanosecond, Pulls: ForgeLister(c), Forge: "github", PullsTTL: time.Millisecond,
		PullsTimeout: timeout})
	defer srv.Close()
	grid := func() (string, time.Duration) {
		start := time.Now()
		resp, err := http.Get(srv.URL + "/")
		must(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body), time.Since(start)
	}
	const pr = `<a href="https://forge.example/pr/9">PR #9</a>`
	if g, _ := grid(); !strings.Contains(g, pr) {
		t.Fatalf("the first list is not shown:\n%s", g)
	}
	time.Sleep(5 * time.Millisecond)
	for range 3 {
		g, took := grid()
		if !strings.Contains(g, pr) || took >= timeout {
			t.Fatalf("while the forge hangs: %s, shows PR #9: %v", took, strings.Contains(g, pr))
		}
	}
	deadline := time.Now().Add(4 * timeout)
	for {
		g, _ := grid()
		if strings.Contains(g, "pull request list unavailable: the forge did not answer within 3s") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hanging forge is never said:\n%s", g)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
