package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// The notifier's repository flags: what a careless configuration gets
// (usage errors naming the flag, no secret printed), and an in-process
// clone of a real Git server with the git command line off PATH.
func TestNotifierGitFlags(t *testing.T) {
	ctx := context.Background()
	const token = "t0ken-from-a-secret"
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: token})
	if _, err := gs.CreateRepo(ctx, "org/gitops.git"); err != nil {
		t.Fatal(err)
	}
	url := gs.URL + "/org/gitops.git"
	dir := t.TempDir()
	tokenFile, empty := filepath.Join(dir, "token"), filepath.Join(dir, "empty")
	for f, body := range map[string]string{tokenFile: token + "\n", empty: ""} {
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The image has no git: nothing below may need it.
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		name string
		g    gitRemoteFlags
		want string
	}{
		{"no git, no URL", gitRemoteFlags{}, "give --notifier-git-url"},
		{"credentials without a URL", gitRemoteFlags{tokenFile: tokenFile}, "need --notifier-git-url"},
		{"a password in the URL", gitRemoteFlags{url: strings.Replace(url, "http://", "http://git:"+token+"@", 1)}, "carries a password"},
		{"an empty token file", gitRemoteFlags{url: url, tokenFile: empty}, "is empty"},
		{"a missing known_hosts", gitRemoteFlags{url: "git@example.com:org/gitops.git", knownHostsFile: filepath.Join(dir, "nope")},
			"--notifier-git-known-hosts-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.g.open(ctx, filepath.Join(t.TempDir(), "clone"))
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("open: %v (exit %d), want a usage error saying %q", err, exitcode.Code(err), tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Fatalf("the error prints the token: %v", err)
			}
		})
	}
	g := gitRemoteFlags{url: url, tokenFile: tokenFile}
	repo, err := g.open(ctx, filepath.Join(dir, "clone"))
	if err != nil {
		t.Fatalf("in-process clone without git on PATH: %v", err)
	}
	if repo.Base != "main" || repo.Remote != "origin" {
		t.Fatalf("clone: base %q remote %q", repo.Base, repo.Remote)
	}
	bad := gitRemoteFlags{url: gs.URL + "/org/missing.git", tokenFile: tokenFile}
	if _, err := bad.open(ctx, filepath.Join(dir, "missing")); err == nil || exitcode.Code(err) == exitcode.Usage {
		t.Fatalf("a repository the server does not have: %v, want a (non-usage) error", err)
	}
}
