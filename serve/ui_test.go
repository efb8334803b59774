package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestServeUI: --ui-bind-address serves the pages read-only on the
// notifier's hardened server, and its flags are checked.
func TestServeUI(t *testing.T) {
	f := chainfixture.New(t, exampleRepo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	u := uiFlags{addr: "127.0.0.1:0", ttl: time.Second}
	if err := u.start(ctx, nil, &notifierFlags{repoDir: f.Dir}, zerolog.New(&logs)); err != nil {
		t.Fatal(err)
	}
	var line struct{ Address string }
	if err := json.Unmarshal(bytes.SplitN(logs.Bytes(), []byte("\n"), 2)[0], &line); err != nil || line.Address == "" {
		t.Fatalf("no address logged: %v: %s", err, logs.String())
	}
	base := "http://" + line.Address
	resp, err := http.Get(base + "/promotion/checkout-production-4b7e2a91c3d5-1.html")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, err = http.Post(base+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	for _, bad := range []uiFlags{
		{addr: "127.0.0.1:0"}, // no repository
		{addr: "127.0.0.1:0", repo: f.Dir, tlsCertFile: "tls.crt"},
		{addr: "127.0.0.1:0", repo: f.Dir, commitURL: "https://x/%d"},
	} {
		if err := bad.start(ctx, nil, &notifierFlags{}, zerolog.Nop()); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%+v: %v, want a usage error", bad, err)
		}
	}
	if err := (&uiFlags{}).start(ctx, nil, &notifierFlags{}, zerolog.Nop()); err != nil {
		t.Errorf("off by default: %v", err)
	}
}

// TestServeUIOnTheNotifiersClone: in the release image (no git) the web
// view reads the notifier's in-process clone of --notifier-git-url, and
// fetches it at each refresh: a commit pushed to the remote is shown.
func TestServeUIOnTheNotifiersClone(t *testing.T) {
	f := chainfixture.New(t, exampleRepo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{})
	remote, err := gs.CreateRepo(ctx, "org/gitops.git")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, ctx, testenv.GitEnv(t.TempDir()), f.Dir, "push", "-q", remote, "HEAD:refs/heads/main")
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir()) // the image has no git
	n := &notifierFlags{repoDir: filepath.Join(t.TempDir(), "clone"), git: gitRemoteFlags{url: remote}}
	if n.repo, err = n.git.open(ctx, n.repoDir); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	u := uiFlags{addr: "127.0.0.1:0", ttl: 50 * time.Millisecond}
	if err := u.start(ctx, nil, n, zerolog.New(&logs)); err != nil {
		t.Fatal(err)
	}
	var line struct{ Address string }
	if err := json.Unmarshal(bytes.SplitN(logs.Bytes(), []byte("\n"), 2)[0], &line); err != nil || line.Address == "" {
		t.Fatalf("no address logged: %v: %s", err, logs.String())
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + line.Address + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s\n%s", path, resp.StatusCode, b, logs.String())
		}
		return string(b)
	}
	tip, err := n.repo.BranchTip(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if page := get("/"); !strings.Contains(page, tip) {
		t.Fatalf("the grid does not say it read %s", tip)
	}
	get("/app/checkout.html") // the accepted history: FileHistory in process
	// Someone else pushes a change to the remote (with git, elsewhere).
	t.Setenv("PATH", path)
	env := testenv.GitEnv(t.TempDir())
	if err := os.WriteFile(filepath.Join(f.Dir, "README.ops.md"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, ctx, env, f.Dir, "add", "-A")
	testenv.Git(t, ctx, env, f.Dir, "commit", "-q", "-m", "unrelated")
	testenv.Git(t, ctx, env, f.Dir, "push", "-q", remote, "HEAD:refs/heads/main")
	next := testenv.Git(t, ctx, env, f.Dir, "rev-parse", "HEAD")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(get("/"), next) {
		if time.Now().After(deadline) {
			t.Fatalf("the grid never showed the remote's new tip %s", next)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeUIForge: with serve's --forge, the web view shows each
// attempt's open request, lists the forge once per refresh of the list
// (not per request), never logs or shows the token; an unknown forge is
// a usage error.
func TestServeUIForge(t *testing.T) {
	const token = "tok-SERVE-91ab"
	t.Setenv("THROUGHLINE_FORGE_TOKEN", token)
	f := chainfixture.New(t, exampleRepo)
	branch := f.AwaitApprovals()
	var lists atomic.Int32
	fs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if page := r.URL.Query().Get("page"); page != "" && page != "1" {
			_, _ = io.WriteString(w, `[]`) // as Gitea answers past the end
			return
		}
		if strings.HasSuffix(r.URL.Path, "/reviews") {
			_, _ = io.WriteString(w, `[{"user":{"login":"alice"},"state":"APPROVED"},{"user":{"login":"bob"},"state":"APPROVED"}]`)
			return
		}
		lists.Add(1)
		_, _ = io.WriteString(w, `[{"number":7,"html_url":"https://gitea.example/platform/gitops-env/pulls/7","title":"promote api",`+
			`"head":{"ref":"`+branch+`","repo":{"full_name":"platform/gitops-env"}},"base":{"ref":"main"}}]`)
	}))
	defer fs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	u := uiFlags{addr: "127.0.0.1:0", ttl: time.Millisecond}
	n := &notifierFlags{repoDir: f.Dir, forgeKind: "gitea", forgeURL: fs.URL, forgeRepo: "platform/gitops-env"}
	if err := u.start(ctx, nil, n, zerolog.New(&logs)); err != nil {
		t.Fatal(err)
	}
	var line struct{ Address string }
	if err := json.Unmarshal(bytes.SplitN(logs.Bytes(), []byte("\n"), 2)[0], &line); err != nil || line.Address == "" {
		t.Fatalf("no address logged: %v: %s", err, logs.String())
	}
	for range 4 {
		resp, err := http.Get("http://" + line.Address + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `<a href="https://gitea.example/platform/gitops-env/pulls/7">PR #7</a> (open, 2 approvals on the forge)`; !strings.Contains(string(body), want) {
			t.Fatalf("the grid does not say %q:\n%s", want, body)
		}
		if strings.Contains(string(body), token) {
			t.Fatal("the page shows the token")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := lists.Load(); got != 1 {
		t.Errorf("the forge was listed %d times in 4 requests, want once (its list is kept %s)", got, chainview.DefaultPullsTTL)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log shows the token: %s", logs.String())
	}
	bad := &notifierFlags{repoDir: f.Dir, forgeKind: "bitbucket", forgeRepo: "a/b"}
	if err := (&uiFlags{addr: "127.0.0.1:0"}).start(ctx, nil, bad, zerolog.Nop()); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("an unknown forge: %v, want a usage error", err)
	}
}
