package testenv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GitServerOptions configures [StartGitServer].
type GitServerOptions struct {
	// Username and Password, when both set, require HTTP basic auth.
	Username, Password string
}

// GitServer is git's own smart-HTTP server (git http-backend) on 127.0.0.1.
type GitServer struct {
	// URL is the base URL (http://127.0.0.1:port), without credentials.
	URL string
	// Root holds the bare repositories.
	Root string

	username, password string
	gitEnv             []string
}

// StartGitServer serves the bare repositories under a temporary root over
// smart HTTP with git http-backend (run through net/http/cgi) and stops it
// when the test ends. Create repositories with [GitServer.CreateRepo].
func StartGitServer(t testing.TB, opts GitServerOptions) *GitServer {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		missing(t, "git not found on PATH", "apt-get install -y git")
	}
	execPath, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if !isExecutable(backend) {
		missing(t, "git-http-backend not found at "+backend, "apt-get install -y git")
	}
	if (opts.Username == "") != (opts.Password == "") {
		t.Fatalf("git server auth needs both a username and a password")
	}
	root := t.TempDir()
	home := t.TempDir() // keeps the user's git config out of the server
	g := &GitServer{
		Root: root, username: opts.Username, password: opts.Password,
		gitEnv: []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"},
	}
	logs := &syncBuffer{}
	cgiHandler := &cgi.Handler{
		Path:   backend,
		Env:    append([]string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, g.gitEnv...),
		Stderr: logs,
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		t0 := time.Now()
		defer func() {
			logs.Printf("%s %s %s -> %d (%s)", r.Method, r.URL.Path, r.URL.RawQuery, rec.status, time.Since(t0).Round(time.Millisecond))
		}()
		if g.username != "" {
			if u, p, ok := r.BasicAuth(); !ok || u != g.username || p != g.password {
				rec.Header().Set("WWW-Authenticate", `Basic realm="throughline-test"`)
				http.Error(rec, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		cgiHandler.ServeHTTP(rec, r)
	})
	srv := httptest.NewServer(handler) // 127.0.0.1, a free port
	g.URL = srv.URL
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("git http-backend log (last %d lines):\n%s", logTailLines, logs.tail())
		}
	})
	t.Cleanup(srv.Close)
	t.Logf("git smart-HTTP server at %s (auth: %t)", g.URL, g.username != "")
	return g
}

// statusRecorder remembers the status code for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// CreateRepo creates an empty bare repository name (e.g. "org/app.git") with
// default branch main that accepts pushes and refuses non-fast-forward updates
// everywhere and the deletion of main, as a forge's protected default branch
// does (other branches, such as merged attempt branches, can be deleted); it
// returns its clone URL, with the credentials in it when auth is on.
func (g *GitServer) CreateRepo(ctx context.Context, name string) (string, error) {
	if !strings.HasSuffix(name, ".git") || strings.Contains(name, "..") || filepath.IsAbs(name) {
		return "", fmt.Errorf("create git repository %q: name must be relative and end in .git", name)
	}
	dir := filepath.Join(g.Root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("create git repository %s: %w", name, err)
	}
	steps := [][]string{
		{"init", "-q", "--bare", "-b", "main", dir},
		{"-C", dir, "config", "http.receivepack", "true"},
		{"-C", dir, "config", "receive.denyNonFastForwards", "true"},
	}
	for _, args := range steps {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Env = append(os.Environ(), g.gitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("create git repository %s: git %s: %w: %s", name, strings.Join(args, " "), err, out)
		}
	}
	hook := filepath.Join(dir, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte(protectMainHook), 0o755); err != nil {
		return "", fmt.Errorf("create git repository %s: protect main: %w", name, err)
	}
	return g.RepoURL(name), nil
}

// protectMainHook refuses a push that deletes main (a new object name of
// all zeros), as a forge's branch protection does.
const protectMainHook = `#!/bin/sh
while read old new ref; do
	case "$new" in
	*[!0]*) ;;
	*) if [ "$ref" = refs/heads/main ]; then
		echo "main is protected: it cannot be deleted" >&2
		exit 1
	fi ;;
	esac
done
`

// RepoURL is the clone URL of repository name, with credentials when auth is on.
func (g *GitServer) RepoURL(name string) string {
	u := g.URL + "/" + name
	if g.username != "" {
		u = strings.Replace(u, "http://", "http://"+g.username+":"+g.password+"@", 1)
	}
	return u
}
