package promote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// githubServer is a GitHub pull request API that opens pull request n+1
// for each new head and closes the open ones of a head on request.
type githubServer struct {
	mu     sync.Mutex
	open   map[string]int // head branch -> number
	closed []string       // head branches closed
}

func (g *githubServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls"):
		var pr struct{ Head string }
		_ = json.NewDecoder(r.Body).Decode(&pr)
		n := len(g.open) + len(g.closed) + 1
		g.open[pr.Head] = n
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"number":%d,"html_url":"https://github.example/pr/%d"}`, n, n)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pulls"):
		_, head, _ := strings.Cut(r.URL.Query().Get("head"), ":")
		if n, ok := g.open[head]; ok {
			_, _ = fmt.Fprintf(w, `[{"number":%d,"head":{"ref":%q}}]`, n, head)
			return
		}
		_, _ = io.WriteString(w, `[]`)
	case r.Method == http.MethodPatch:
		for head, n := range g.open {
			if strings.HasSuffix(r.URL.Path, fmt.Sprintf("/pulls/%d", n)) {
				delete(g.open, head)
				g.closed = append(g.closed, head)
			}
		}
		_, _ = io.WriteString(w, `{}`)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestNewAttemptSupersedes (issue 33, item 6): after main moved, proposing
// again opens attempt 2, which supersedes attempt 1: its commit message
// names it, its branch is deleted on the remote (a real Git server) and
// its pull request closed through the forge. An attempt branch someone
// pushed to since it was read is never deleted over their commit: attempt
// 3 leaves attempt 2's branch and says why.
func TestNewAttemptSupersedes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{})
	url, err := gs.CreateRepo(ctx, "org/gitops.git")
	must(t, err)
	f.git("remote", "add", "origin", url)
	f.git("push", "-q", "origin", "main")
	gh := &githubServer{open: map[string]int{}}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	fc := &forge.Client{Kind: forge.GitHub, BaseURL: srv.URL, Repo: "org/gitops", Token: "t", HTTP: srv.Client()}
	propose := func() *Proposal {
		t.Helper()
		f.repo, err = gitops.Open(ctx, f.root) // fetches what the remote has
		must(t, err)
		p := f.propose()
		must(t, p.OpenPullRequest(ctx, fc, "main", "promote "+p.Record.PromotionID, p.PullRequestBody()))
		return p
	}
	cpu := "1"
	moveMain := func(next string) {
		t.Helper()
		f.replace("apps/checkout/overlays/production/environment.yaml", "cpu: "+cpu+",", "cpu: "+next+",")
		cpu = next
		f.commit("production needs more cpu")
		f.git("push", "-q", "origin", "main")
	}
	remoteBranches := func() string { return f.git("ls-remote", "--heads", "origin") }

	first := propose()
	if len(first.Superseded) != 0 {
		t.Fatalf("the first attempt supersedes %+v", first.Superseded)
	}
	moveMain("2")
	second := propose()
	if second.Existing || second.Record.Attempt != 2 || len(second.Superseded) != 1 {
		t.Fatalf("after main moved: %+v, superseded %+v", second.Record, second.Superseded)
	}
	s := second.Superseded[0]
	if s.PromotionID != first.Record.PromotionID || s.Branch != first.Branch || s.Commit != first.Commit || !s.Deleted ||
		len(s.PullRequests) != 1 {
		t.Fatalf("superseded %+v, want %s on %s at %s deleted with its pull request closed", s, first.Record.PromotionID, first.Branch, first.Commit)
	}
	if strings.Contains(remoteBranches(), first.Branch) {
		t.Fatalf("the superseded branch %s is still on the remote:\n%s", first.Branch, remoteBranches())
	}
	if len(gh.closed) != 1 || gh.closed[0] != first.Branch || gh.open[second.Branch] == 0 {
		t.Fatalf("pull requests open %v, closed %v: want %s closed and %s open", gh.open, gh.closed, first.Branch, second.Branch)
	}
	msg, err := f.repo.Message(ctx, second.Commit)
	must(t, err)
	if want := SupersedesLine + first.Record.PromotionID + " (" + first.Branch + ")"; !strings.Contains(msg, want) {
		t.Fatalf("the new attempt's commit message does not name the attempt it supersedes (%q):\n%s", want, msg)
	}

	// Someone pushes onto attempt 2's branch; then main moves again.
	moved := strings.TrimSpace(f.git("commit-tree", "-p", second.Commit, "-m", "a reviewer's fixup", second.Commit+"^{tree}"))
	f.git("push", "-q", "origin", moved+":refs/heads/"+second.Branch)
	f.repo, err = gitops.Open(ctx, f.root)
	must(t, err)
	moveMain("3")
	// Attempt 2's branch is read at its new tip: superseded at it.
	third := propose()
	if len(third.Superseded) != 1 || third.Superseded[0].Commit != moved || !third.Superseded[0].Deleted {
		t.Fatalf("attempt 3 superseded %+v, want attempt 2 at %s", third.Superseded, moved)
	}

	// A branch that moves between the read and the delete is left.
	moveMain("4")
	f.repo, err = gitops.Open(ctx, f.root)
	must(t, err)
	sup, err := openAttemptsOf(ctx, f.repo, f.git("rev-parse", "main"), "checkout", "production", nil)
	must(t, err)
	if len(sup) != 1 || sup[0].Branch != third.Branch {
		t.Fatalf("open attempts %+v, want %s", sup, third.Branch)
	}
	fixup := strings.TrimSpace(f.git("commit-tree", "-p", third.Commit, "-m", "a reviewer's fixup", third.Commit+"^{tree}"))
	f.git("push", "-q", "origin", fixup+":refs/heads/"+third.Branch)
	got := closeSuperseded(ctx, f.repo, sup)
	if got[0].Deleted || !strings.Contains(got[0].NotDeleted, "moved") {
		t.Fatalf("a branch that moved: %+v, want it left, saying it moved", got[0])
	}
	if !strings.Contains(remoteBranches(), fixup+"\trefs/heads/"+third.Branch) {
		t.Fatalf("the moved branch %s is not at the reviewer's commit %s:\n%s", third.Branch, fixup, remoteBranches())
	}
}
