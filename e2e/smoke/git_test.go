//go:build e2e

package smoke

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/testenv"
)

// git runs git in dir with a fixed identity and no user config.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func mustGit(t *testing.T, ctx context.Context, dir string, args ...string) string {
	t.Helper()
	out, err := git(ctx, dir, args...)
	must(t, err)
	return out
}

func commitFile(t *testing.T, ctx context.Context, dir, file, content string) string {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
	mustGit(t, ctx, dir, "add", file)
	mustGit(t, ctx, dir, "commit", "-q", "-m", "update "+file)
	return mustGit(t, ctx, dir, "rev-parse", "HEAD")
}

// TestGitServer: a commit pushed over smart HTTP clones back; of two
// concurrent pushes from the same base exactly one lands and the other is
// refused; a forced non-fast-forward push is refused by the server.
func TestGitServer(t *testing.T) {
	srv := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: "s3cr3t"})
	ctx := testContext(t, 2*time.Minute)
	remote, err := srv.CreateRepo(ctx, "org/gitops.git")
	must(t, err)

	// Credentials are checked.
	if _, err := git(ctx, t.TempDir(), "ls-remote", srv.URL+"/org/gitops.git"); err == nil {
		t.Fatal("ls-remote without credentials succeeded")
	}

	work := t.TempDir()
	mustGit(t, ctx, work, "init", "-q", "-b", "main")
	base := commitFile(t, ctx, work, "app.yaml", "image: demo/app@sha256:"+strings.Repeat("a", 64)+"\n")
	mustGit(t, ctx, work, "push", "-q", remote, "main")

	clone := filepath.Join(t.TempDir(), "c")
	mustGit(t, ctx, filepath.Dir(clone), "clone", "-q", "-b", "main", remote, clone)
	if got := mustGit(t, ctx, clone, "rev-parse", "HEAD"); got != base {
		t.Fatalf("cloned HEAD %s, want pushed %s", got, base)
	}

	// Two writers from the same base push at once: compare-and-swap on main.
	writers := make([]string, 2)
	shas := make([]string, 2)
	for i := range writers {
		writers[i] = filepath.Join(t.TempDir(), "w")
		mustGit(t, ctx, filepath.Dir(writers[i]), "clone", "-q", "-b", "main", remote, writers[i])
		shas[i] = commitFile(t, ctx, writers[i], fmt.Sprintf("evidence-%d.json", i), fmt.Sprintf("{\"writer\":%d}\n", i))
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			_, errs[i] = git(ctx, writers[i], "push", "-q", "origin", "main")
		})
	}
	close(start)
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("concurrent pushes: want exactly one refused, got errors %v and %v", errs[0], errs[1])
	}
	winner, loser := 0, 1
	if errs[0] != nil {
		winner, loser = 1, 0
	}
	head := strings.Fields(mustGit(t, ctx, work, "ls-remote", remote, "refs/heads/main"))[0]
	if head != shas[winner] {
		t.Fatalf("remote main = %s, want the accepted push %s", head, shas[winner])
	}
	t.Logf("concurrent push: %s landed, %s refused: %v", shas[winner][:8], shas[loser][:8], errs[loser])

	// Even forced, a non-fast-forward update is refused by the server.
	out, err := git(ctx, writers[loser], "push", "--force", "origin", "main")
	if err == nil {
		t.Fatal("forced non-fast-forward push accepted")
	}
	if !strings.Contains(out, "non-fast-forward") && !strings.Contains(out, "denying") {
		t.Fatalf("forced push refused for another reason: %s", out)
	}
	if head := strings.Fields(mustGit(t, ctx, work, "ls-remote", remote, "refs/heads/main"))[0]; head != shas[winner] {
		t.Fatalf("remote main moved to %s after a refused push", head)
	}

	// main is protected from deletion; another branch (a merged attempt's)
	// can be deleted, as on a forge.
	if out, err := git(ctx, writers[winner], "push", "origin", ":refs/heads/main"); err == nil || !strings.Contains(out, "main is protected") {
		t.Fatalf("deleting main: err %v, output %s", err, out)
	}
	mustGit(t, ctx, writers[winner], "push", "-q", "origin", "HEAD:refs/heads/throughline/promote/app/prod/x-1")
	mustGit(t, ctx, writers[winner], "push", "-q", "origin", ":refs/heads/throughline/promote/app/prod/x-1")
	if heads := mustGit(t, ctx, work, "ls-remote", "--heads", remote); strings.Contains(heads, "x-1") || !strings.Contains(heads, "refs/heads/main") {
		t.Fatalf("after the deletions the remote has:\n%s", heads)
	}
}
