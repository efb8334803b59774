package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

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
