package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// remoteRepo is a repository on git's own smart-HTTP server (basic auth
// git:s3cr3t), seeded through the git command line with a GitOps layout.
type remoteRepo struct {
	server *testenv.GitServer
	name   string
	url    string // without credentials
	seed   string // a CLI clone to inspect and move the remote with
}

const testToken = "s3cr3t-token-value"

func newRemote(t *testing.T) *remoteRepo {
	t.Helper()
	gs := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: testToken})
	withCreds, err := gs.CreateRepo(context.Background(), "org/gitops.git")
	if err != nil {
		t.Fatal(err)
	}
	seed := filepath.Join(t.TempDir(), "seed")
	gittest.Run(t, filepath.Dir(seed), "clone", "-q", withCreds, seed)
	gittest.Commit(t, seed, "seed", map[string]string{
		"apps/shop/overlays/staging/kustomization.yaml": "resources: [../../base]\n",
		"apps/shop/base/deploy.yaml":                    "kind: Deployment\n",
		"promotion/shop/staging.yaml":                   "state: RECONCILING\n",
		"zz.yaml":                                       "top: 1\n",
	})
	gittest.Run(t, seed, "push", "-q", "origin", "main")
	return &remoteRepo{server: gs, name: "org/gitops.git", url: gs.URL + "/org/gitops.git", seed: seed}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (rr *remoteRepo) clone(t *testing.T, dir string) *Repo {
	t.Helper()
	r, err := Clone(context.Background(), CloneOptions{URL: rr.url, Dir: dir, Credentials: Credentials{Token: []byte(testToken)}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tip is the remote's main, read with the git command line.
func (rr *remoteRepo) tip(t *testing.T) string {
	t.Helper()
	gittest.Run(t, rr.seed, "fetch", "-q", "origin")
	return gittest.Run(t, rr.seed, "rev-parse", "origin/main")
}

func TestCloneReadsLikeTheCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	r := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	tip := rr.tip(t)
	if b := r.DefaultBranch(ctx); b != "main" {
		t.Fatalf("DefaultBranch = %q, want the remote's HEAD main", b)
	}
	if got, err := r.BranchTip(ctx, "main"); err != nil || got != tip {
		t.Fatalf("BranchTip = %q, %v; want %s", got, err, tip)
	}
	for _, rev := range []string{tip, "refs/remotes/origin/main", "origin/main"} {
		if got, err := r.Resolve(ctx, rev); err != nil || got != tip {
			t.Errorf("Resolve(%s) = %q, %v; want %s", rev, got, err, tip)
		}
	}
	data, err := r.ReadFile(ctx, tip, "promotion/shop/staging.yaml")
	if err != nil || string(data) != "state: RECONCILING\n" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	for _, missing := range []string{"promotion/shop/production.yaml", "apps", "nope/x"} {
		if _, err := r.ReadFile(ctx, tip, missing); !errors.Is(err, ErrNotFound) && missing != "apps" {
			t.Errorf("ReadFile(%s): %v, want ErrNotFound", missing, err)
		} else if missing == "apps" && err == nil {
			t.Errorf("ReadFile of a directory read something")
		}
	}
	for _, dir := range []string{".", "apps/shop", "promotion", "no/such/dir"} {
		got, err := r.ListTree(ctx, tip, dir)
		must(t, err)
		args := []string{"ls-tree", "-r", "--name-only", tip}
		if dir != "." {
			args = append(args, "--", dir+"/")
		}
		want := strings.Fields(gittest.Run(t, rr.seed, args...))
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("ListTree(%s) = %v, git ls-tree says %v", dir, got, want)
		}
	}
	// Export reads in process too: the same files as git ls-tree lists.
	root, err := r.Export(ctx, tip, t.TempDir())
	must(t, err)
	for _, f := range strings.Fields(gittest.Run(t, rr.seed, "ls-tree", "-r", "--name-only", tip)) {
		want := gittest.Run(t, rr.seed, "show", tip+":"+f)
		if got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f))); err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("Export of an in-process clone: %s is %q, %v; git show says %q", f, got, err, want)
		}
	}
	if _, err := r.Signing().Commit(ctx, tip, map[string][]byte{"a": nil}, "m"); !errors.Is(err, ErrNeedsGitCLI) {
		t.Errorf("a signed commit in process: %v, want ErrNeedsGitCLI", err)
	}
}

// The commit an in-process clone builds is the one git builds: same tree
// id for the same change (git fsck checks the tree's order and modes).
func TestCloneCommitMatchesGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	r := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	cli, err := Open(ctx, rr.seed)
	must(t, err)
	cli.Env = []string{"HOME=" + rr.seed, "GIT_CONFIG_NOSYSTEM=1"}
	tip := rr.tip(t)
	files := map[string][]byte{
		"promotion/shop/staging.yaml":       []byte("state: ACCEPTED\n"), // replaced
		"evidence/staging/shop/p-1.json":    []byte("{}\n"),              // new nested dirs
		"apps/shop/overlays/staging.yaml":   []byte("x\n"),               // a file beside a directory of that prefix
		"apps/shop/overlays/staging-a.yaml": []byte("y\n"),
		"a.yaml":                            []byte("first\n"),
	}
	mine, err := r.Commit(ctx, tip, files, "evidence\n")
	must(t, err)
	theirs, err := cli.Commit(ctx, tip, files, "evidence\n")
	must(t, err)
	must(t, r.SetBranch(ctx, "main", tip, mine))
	gittest.Run(t, rr.seed, "fetch", "-q", "origin")
	if got, want := gittest.Run(t, rr.seed, "rev-parse", mine+"^{tree}"), gittest.Run(t, rr.seed, "rev-parse", theirs+"^{tree}"); got != want {
		t.Fatalf("in-process tree %s, git's %s:\n%s\n---\n%s", got, want,
			gittest.Run(t, rr.seed, "ls-tree", "-r", mine), gittest.Run(t, rr.seed, "ls-tree", "-r", theirs))
	}
	gittest.Run(t, rr.seed, "fsck", "--strict", "--no-dangling")
	if got := gittest.Run(t, rr.seed, "show", "origin/main:evidence/staging/shop/p-1.json"); got != "{}" {
		t.Fatalf("pushed evidence reads %q", got)
	}
	if got := gittest.Run(t, rr.seed, "log", "-1", "--format=%an <%ae>|%P", "origin/main"); got != "throughline <throughline@localhost>|"+tip {
		t.Fatalf("commit author|parents = %q", got)
	}
}

// Compare-and-swap: a stale old value never moves the branch, a branch
// already at the commit is ErrUnchanged, and Update re-applies its change
// on a tip someone else moved.
func TestClonePushIsCompareAndSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	r := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	tip := rr.tip(t)
	c1, err := r.Commit(ctx, tip, map[string][]byte{"one": []byte("1")}, "one")
	must(t, err)
	// Someone else moves main first.
	gittest.Commit(t, rr.seed, "other", map[string]string{"other": "2"})
	gittest.Run(t, rr.seed, "push", "-q", "origin", "main")
	moved := rr.tip(t)
	if err := r.SetBranch(ctx, "main", tip, c1); !errors.Is(err, ErrRejected) {
		t.Fatalf("push on a moved branch: %v, want ErrRejected", err)
	}
	if now := rr.tip(t); now != moved {
		t.Fatalf("a rejected push moved main to %s", now)
	}
	// A stale old value that c1 does descend from is still refused.
	if err := r.SetBranch(ctx, "main", moved, c1); !errors.Is(err, ErrRejected) {
		t.Fatalf("push claiming main was at %s: %v, want ErrRejected", moved, err)
	}
	must(t, r.Fetch(ctx))
	if err := r.SetBranch(ctx, "main", tip, moved); !errors.Is(err, ErrUnchanged) {
		t.Fatalf("push of the remote's own tip: %v, want ErrUnchanged", err)
	}
	calls := 0
	sha, err := r.Update(ctx, "main", 3, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		calls++
		if calls == 1 { // lose the first race
			gittest.Commit(t, rr.seed, "third", map[string]string{"third": "3"})
			gittest.Run(t, rr.seed, "push", "-q", "origin", "main")
		}
		return map[string][]byte{"mine": []byte(tip)}, "mine", nil
	})
	must(t, err)
	if calls != 2 || rr.tip(t) != sha {
		t.Fatalf("Update: %d calls, remote at %s, want 2 calls and %s", calls, rr.tip(t), sha)
	}
	if got := gittest.Run(t, rr.seed, "log", "--format=%s", "-3", "origin/main"); got != "mine\nthird\nother" {
		t.Fatalf("history:\n%s", got)
	}
}

func TestClonePushDeclinedByHook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	hook := filepath.Join(rr.server.Root, rr.name, "hooks", "pre-receive")
	must(t, os.WriteFile(hook, []byte("#!/bin/sh\necho 'main is frozen'\nexit 1\n"), 0o755))
	r := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	tip := rr.tip(t)
	c, err := r.Commit(ctx, tip, map[string][]byte{"x": []byte("x")}, "x")
	must(t, err)
	var d *DeclinedError
	if err := r.SetBranch(ctx, "main", tip, c); !errors.As(err, &d) {
		t.Fatalf("push through a declining hook: %v, want a DeclinedError", err)
	}
}

// What a careless or hostile configuration gets: refused before any
// network use, and no message holds the token.
func TestCloneRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	other := t.TempDir()
	must(t, os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644))
	knownHosts := filepath.Join(t.TempDir(), "known_hosts")
	must(t, os.WriteFile(knownHosts, nil, 0o600))
	// The wording of every refusal: testdata/clone-refuses.golden.
	msgs := golden.ErrorLines(t, "testdata/clone-refuses.golden", 10)
	for _, tc := range []struct {
		name   string
		opts   CloneOptions
		remote bool // refused by the remote, not a ConfigError
	}{
		{"password in the URL", CloneOptions{URL: strings.Replace(rr.url, "http://", "http://git:"+testToken+"@", 1)}, false},
		{"http to a remote host", CloneOptions{URL: "http://git.example.com/org/gitops.git"}, false},
		{"ssh without known_hosts", CloneOptions{URL: "git@github.com:org/gitops.git", Credentials: Credentials{SSHKey: []byte("k")}}, false},
		{"token for ssh", CloneOptions{URL: "ssh://git@github.com/org/gitops.git", Credentials: Credentials{Token: []byte(testToken)}}, false},
		{"ssh key for https", CloneOptions{URL: "https://github.com/org/gitops.git", Credentials: Credentials{SSHKey: []byte("k")}}, false},
		{"a broken ssh key", CloneOptions{URL: "ssh://git@github.com/org/gitops.git", Credentials: Credentials{SSHKey: []byte("not a key"),
			KnownHostsFile: knownHosts}}, false},
		{"unknown protocol", CloneOptions{URL: "ftp://example.com/x.git"}, false},
		{"a directory holding something else", CloneOptions{URL: rr.url, Dir: other, Credentials: Credentials{Token: []byte(testToken)}}, false},
		{"wrong token", CloneOptions{URL: rr.url, Credentials: Credentials{Token: []byte("wrong-" + testToken)}}, true},
		{"no token", CloneOptions{URL: rr.url}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Dir == "" {
				tc.opts.Dir = filepath.Join(t.TempDir(), "c")
			}
			_, err := Clone(ctx, tc.opts)
			if err == nil {
				t.Fatal("Clone refused nothing")
			}
			var ce *ConfigError
			if errors.As(err, &ce) == tc.remote {
				t.Errorf("ConfigError: %t, want %t (the remote refused, not the configuration)", !tc.remote, tc.remote)
			}
			msgs(tc.name, errors.New(strings.NewReplacer(strings.TrimPrefix(rr.server.URL, "http://"), "GIT-HOST",
				tc.opts.Dir, "DIR").Replace(err.Error())))
			if strings.Contains(err.Error(), testToken) {
				t.Fatalf("the error prints the token: %v", err)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(other, "notes.txt")); string(b) != "mine" {
		t.Fatal("Clone changed a directory it refused")
	}
}

// A second Clone into the same directory reuses it (a restarted Pod with
// its volume), and one of another URL is refused.
func TestCloneReopens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	dir := filepath.Join(t.TempDir(), "clone")
	rr.clone(t, dir)
	r := rr.clone(t, dir)
	if _, err := r.BranchTip(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	_, err := Clone(ctx, CloneOptions{URL: rr.server.URL + "/org/other.git", Dir: dir, Credentials: Credentials{Token: []byte(testToken)}})
	if err == nil || !strings.Contains(err.Error(), "holds a clone of") {
		t.Fatalf("reusing a clone of another URL: %v", err)
	}
}

func TestCommitRefusesPathsOutsideTheTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	r := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	tip := rr.tip(t)
	for _, p := range []string{"../x", "a/../../x", ".git/config", "a/.GIT/hooks/x", "/etc/passwd", "zz.yaml/below"} {
		if _, err := r.Commit(ctx, tip, map[string][]byte{p: []byte("x")}, "m"); err == nil {
			t.Errorf("Commit(%q) built a commit", p)
		}
	}
	if _, err := r.Commit(ctx, tip, map[string][]byte{"apps": []byte("x")}, "m"); err == nil {
		t.Error("Commit replaced a directory with a file")
	}
}

func TestOpenWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Open(context.Background(), t.TempDir())
	if !errors.Is(err, ErrNoGitCLI) {
		t.Fatalf("Open without git on PATH: %v, want ErrNoGitCLI", err)
	}
	if strings.Contains(err.Error(), "not a Git work tree") {
		t.Fatalf("the error blames the repository: %v", err)
	}
}

// The notifier reads (deliveries, the resync) while it writes: the clone
// serializes go-git, so -race finds nothing and every read sees a commit.
func TestCloneConcurrentUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	r := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			if i%2 == 0 {
				_, err := r.Update(ctx, "main", 10, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
					return map[string][]byte{"w/" + string(rune('a'+i)): []byte(tip)}, "w", nil
				})
				done <- err
				return
			}
			tip, err := r.BranchTip(ctx, "main")
			if err == nil {
				_, err = r.ReadFile(ctx, tip, "zz.yaml")
			}
			done <- err
		}()
	}
	for range 8 {
		must(t, <-done)
	}
	files, err := r.ListTree(ctx, rr.tip(t), "w")
	must(t, err)
	if len(files) != 4 {
		t.Fatalf("after 4 concurrent updates main has %v under w/", files)
	}
}

// Git over SSH against a real sshd: the key and known_hosts of the
// Credentials, a push, and what a wrong host key or client key gets.
func TestCloneOverSSH(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testenv.StartSSHGitServer(t)
	bare := filepath.Join(t.TempDir(), "gitops.git")
	gittest.Run(t, filepath.Dir(bare), "init", "-q", "--bare", "-b", "main", bare)
	seed := filepath.Join(t.TempDir(), "seed")
	gittest.Run(t, filepath.Dir(seed), "clone", "-q", bare, seed)
	gittest.Commit(t, seed, "seed", map[string]string{"a.yaml": "a: 1\n"})
	gittest.Run(t, seed, "push", "-q", "origin", "main")
	creds := Credentials{SSHKey: srv.ClientKey, KnownHostsFile: srv.KnownHosts}
	r, err := Clone(ctx, CloneOptions{URL: srv.URL(bare), Dir: filepath.Join(t.TempDir(), "c"), Credentials: creds})
	if err != nil {
		t.Fatalf("clone over SSH: %v", err)
	}
	sha, err := r.Update(ctx, "main", 2, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		return map[string][]byte{"evidence/e.json": []byte("{}")}, "evidence", nil
	})
	must(t, err)
	if got := gittest.Run(t, bare, "rev-parse", "main"); got != sha {
		t.Fatalf("main on the SSH remote is %s, want the pushed %s", got, sha)
	}
	for name, tc := range map[string]struct {
		c    Credentials
		want string
	}{
		"a host key not in known_hosts": {Credentials{SSHKey: srv.ClientKey, KnownHostsFile: srv.WrongKnownHosts}, "key mismatch"},
		"a key sshd does not authorize": {Credentials{SSHKey: srv.OtherKey, KnownHostsFile: srv.KnownHosts}, "unable to authenticate"},
	} {
		_, err := Clone(ctx, CloneOptions{URL: srv.URL(bare), Dir: filepath.Join(t.TempDir(), "c"), Credentials: tc.c})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("clone with %s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

// FileHistory in process lists what git log lists: changes on main, a
// merged branch's change (not the merge that brought it), a merge that
// resolved a conflict in the file, a deletion and a re-creation, and
// nothing for commits that left the file alone.
func TestCloneFileHistoryMatchesGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	const file = "promotion/shop/staging.yaml"
	n := 0
	commit := func(dir, msg string, files map[string]string) {
		t.Helper()
		for p, body := range files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if body == "" {
				must(t, os.Remove(full))
				continue
			}
			gittest.Write(t, dir, map[string]string{p: body})
		}
		gittest.Run(t, dir, "add", "-A")
		n++
		date := fmt.Sprintf("GIT_COMMITTER_DATE=2026-11-01T10:%02d:00Z", n)
		// A local exec: each commit needs its own dates (gittest.Env's extra).
		cmd := exec.Command("git", "commit", "-q", "-a", "-m", msg)
		cmd.Dir, cmd.Env = dir, gittest.Env(dir, date, "GIT_AUTHOR_DATE=2026-11-01T10:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("commit %s: %v: %s", msg, err, out)
		}
	}
	s := rr.seed
	gittest.Run(t, s, "add", "-A")
	commit(s, "unrelated", map[string]string{"zz.yaml": "top: 2\n"})
	commit(s, "record v2", map[string]string{file: "state: ACCEPTED\n"})
	gittest.Run(t, s, "checkout", "-q", "-b", "pr")
	commit(s, "record v3 on a branch", map[string]string{file: "state: VERIFIED\n"})
	gittest.Run(t, s, "checkout", "-q", "main")
	commit(s, "unrelated on main", map[string]string{"zz.yaml": "top: 3\n"})
	merge := func(msg string) {
		// A local exec: a merge that conflicts fails, and is resolved below.
		cmd := exec.Command("git", "merge", "-q", "--no-ff", "-m", msg, "pr")
		n++
		cmd.Dir, cmd.Env = s, gittest.Env(s, fmt.Sprintf("GIT_COMMITTER_DATE=2026-11-01T10:%02d:00Z", n))
		_ = cmd.Run() // a conflict is resolved below
	}
	merge("merge pr")
	gittest.Run(t, s, "checkout", "-q", "pr")
	commit(s, "record v4 on the branch", map[string]string{file: "state: HALTED\n"})
	gittest.Run(t, s, "checkout", "-q", "main")
	commit(s, "record v5 on main", map[string]string{file: "state: RECONCILING\n"})
	merge("merge pr again")
	must(t, os.WriteFile(filepath.Join(s, filepath.FromSlash(file)), []byte("state: ACCEPTED\nresolved: true\n"), 0o644))
	gittest.Run(t, s, "add", "-A")
	commit(s, "resolved", nil)
	commit(s, "deleted", map[string]string{file: ""})
	commit(s, "re-created", map[string]string{file: "state: CANDIDATE\n"})
	// A directory removed whole, then a file where it was, then the
	// directory again (the index marks a directory's files changed).
	commit(s, "base removed", map[string]string{"apps/shop/base/deploy.yaml": ""})
	must(t, os.Remove(filepath.Join(s, "apps", "shop", "base"))) // git keeps no empty directory, the work tree does
	commit(s, "base is a file", map[string]string{"apps/shop/base": "not a directory\n"})
	commit(s, "base is a file no more", map[string]string{"apps/shop/base": ""})
	commit(s, "base again", map[string]string{"apps/shop/base/deploy.yaml": "kind: StatefulSet\n"})
	gittest.Run(t, s, "push", "-q", "origin", "main", "pr")

	cli, err := Open(ctx, s)
	must(t, err)
	r := rr.clone(t, filepath.Join(t.TempDir(), "clone"))
	tip := rr.tip(t)
	for _, p := range []string{file, "zz.yaml", "apps/shop/base/deploy.yaml", "apps/shop/base", "no/such/file"} {
		want, err := cli.FileHistory(ctx, tip, p)
		must(t, err)
		got, err := r.FileHistory(ctx, tip, p)
		must(t, err)
		t.Logf("%s: %d commits", p, len(want))
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("FileHistory(%s):\n in process %v\n git        %v\n%s", p, got, want, gittest.Run(t, s, "log", "--graph", "--format=%h %s", tip))
		}
		// One commit at a time, from a fresh clone (no remembered answer):
		// the same commits, and a reader that stops after the newest one
		// leaves the walk unfinished (nothing remembered).
		fresh := rr.clone(t, filepath.Join(t.TempDir(), "fresh"))
		var first []string
		must(t, fresh.EachFileHistory(ctx, tip, p, func(c string) bool { first = append(first, c); return false }))
		if len(want) > 0 && (len(first) != 1 || first[0] != want[0]) || len(want) == 0 && len(first) != 0 {
			t.Errorf("EachFileHistory(%s) stopped after one: %v, git's newest %v", p, first, want)
		}
		if n := len(fresh.mem.index.histories); len(want) > 0 && n != 0 {
			t.Errorf("EachFileHistory(%s) stopped early but remembered %d answers", p, n)
		}
		var each []string
		must(t, fresh.EachFileHistory(ctx, tip, p, func(c string) bool { each = append(each, c); return true }))
		if strings.Join(each, " ") != strings.Join(want, " ") {
			t.Errorf("EachFileHistory(%s) = %v, git %v", p, each, want)
		}
		// Every version read in process is the one git reads at that
		// commit: the same path with new content at a later commit (the
		// remembered trees are keyed by their ids) reads the new content.
		for _, c := range want {
			a, errA := cli.ReadFile(ctx, c, p)
			b, errB := fresh.ReadFile(ctx, c, p)
			if errA != nil && !errors.Is(errA, ErrNotFound) && errors.Is(errB, ErrNotFound) {
				continue // a directory: git says "a tree, not a file", go-git's reader (before and after issue 37) "not found"
			}
			if string(a) != string(b) || errors.Is(errA, ErrNotFound) != errors.Is(errB, ErrNotFound) {
				t.Errorf("ReadFile(%s) at %s: in process %q (%v), git %q (%v)", p, Short(c), b, errB, a, errA)
			}
		}
	}
	// The index bounded to one commit (forgotten before every operation
	// that finds it over): the same answers, read again.
	small := rr.clone(t, filepath.Join(t.TempDir(), "small"))
	small.mem.index.maxCommits = 1
	all := strings.Fields(gittest.Run(t, s, "rev-list", "--all"))
	for _, p := range []string{file, "apps/shop/base/deploy.yaml"} {
		want, err := cli.FileHistory(ctx, tip, p)
		must(t, err)
		for range 2 {
			got, err := small.FileHistory(ctx, tip, p)
			must(t, err)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("bounded index: FileHistory(%s) = %v, git %v", p, got, want)
			}
			small.mem.index.histories = nil // walk again, over a forgotten index
		}
	}
	for _, a := range all {
		for _, b := range all[:3] {
			want, err := cli.IsAncestor(ctx, a, b)
			must(t, err)
			got, err := small.IsAncestor(ctx, a, b)
			must(t, err)
			if got != want {
				t.Errorf("bounded index: IsAncestor(%s, %s) = %v, git %v", Short(a), Short(b), got, want)
			}
		}
	}
	if n := len(small.mem.index.commits); n > len(all) {
		t.Errorf("bounded index holds %d commits, the repository has %d", n, len(all))
	}
}

// ReadInProcess on a work tree reads what git reads, with a GitOps root in
// a subdirectory too, and sees what a later fetch brought (a new pack).
func TestReadInProcessMatchesGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	for _, sub := range []string{"", "apps"} {
		cli, err := Open(ctx, filepath.Join(rr.seed, sub))
		must(t, err)
		fast, err := Open(ctx, filepath.Join(rr.seed, sub))
		must(t, err)
		must(t, fast.ReadInProcess())
		tip, err := fast.Resolve(ctx, "origin/main")
		must(t, err)
		if want, _ := cli.Resolve(ctx, "origin/main"); tip != want {
			t.Fatalf("Resolve(origin/main) = %s, git says %s", tip, want)
		}
		if got, err := fast.Resolve(ctx, "HEAD@{0}"); err != nil || got != tip {
			t.Fatalf("Resolve(HEAD@{0}) (git's syntax) = %s, %v", got, err)
		}
		for _, dir := range []string{".", "shop", "apps/shop", "promotion"} {
			want, err := cli.ListTree(ctx, tip, dir)
			must(t, err)
			got, err := fast.ListTree(ctx, tip, dir)
			must(t, err)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("root %q: ListTree(%s) = %v, git %v", sub, dir, got, want)
			}
			for _, f := range want {
				a, err := cli.ReadFile(ctx, tip, f)
				must(t, err)
				b, err := fast.ReadFile(ctx, tip, f)
				must(t, err)
				if string(a) != string(b) {
					t.Errorf("ReadFile(%s) differs", f)
				}
				ha, _ := cli.FileHistory(ctx, tip, f)
				hb, _ := fast.FileHistory(ctx, tip, f)
				if strings.Join(ha, " ") != strings.Join(hb, " ") {
					t.Errorf("FileHistory(%s) = %v, git %v", f, hb, ha)
				}
			}
		}
	}
	// A reader that has read already (go-git loaded the pack index),
	// then another clone pushes 150 files (git fetch stores them as a pack).
	fast, err := Open(ctx, rr.seed)
	must(t, err)
	must(t, fast.ReadInProcess())
	if _, err := fast.ReadFile(ctx, "origin/main", "zz.yaml"); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	gittest.Run(t, filepath.Dir(other), "clone", "-q", strings.Replace(rr.url, "http://", "http://git:"+testToken+"@", 1), other)
	many := map[string]string{}
	for i := range 150 {
		many[fmt.Sprintf("f%03d.yaml", i)] = fmt.Sprintf("n: %d\n", i)
	}
	gittest.Commit(t, other, "many", many)
	gittest.Run(t, other, "push", "-q", "origin", "main")
	must(t, fast.Fetch(ctx))
	tip, err := fast.Resolve(ctx, "origin/main")
	must(t, err)
	if b, err := fast.ReadFile(ctx, tip, "f149.yaml"); err != nil || string(b) != "n: 149\n" {
		t.Fatalf("after a fetch: %q, %v", b, err)
	}
}

// Ancestry in process: an unknown commit is not an ancestor, but a
// repository that cannot be read is an error, never a "no" (the notifier
// would HALT a good promotion as "wrong revision" on a damaged clone).
func TestCloneAncestryOnADamagedClone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rr := newRemote(t)
	dir := filepath.Join(t.TempDir(), "clone")
	r := rr.clone(t, dir)
	tip := rr.tip(t)
	if ok, err := r.IsAncestor(ctx, tip, tip); err != nil || !ok {
		t.Fatalf("IsAncestor(tip, tip) = %t, %v", ok, err)
	}
	if ok, err := r.IsAncestor(ctx, strings.Repeat("ab", 20), tip); err != nil || ok {
		t.Fatalf("an unknown commit: %t, %v; want false, nil", ok, err)
	}
	packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if err != nil || len(packs) == 0 {
		t.Fatalf("no pack in the clone: %v", err)
	}
	for _, p := range packs {
		data, err := os.ReadFile(p)
		must(t, err)
		for i := 32; i < len(data)-20; i++ { // keep the header, garble the objects
			data[i] ^= 0x5a
		}
		must(t, os.WriteFile(p, data, 0o644))
	}
	fresh, err := Clone(ctx, CloneOptions{URL: rr.url, Dir: dir, Credentials: Credentials{Token: []byte(testToken)}})
	if err != nil {
		t.Logf("reopening the damaged clone: %v", err)
		return // refusing to open it is fine too
	}
	ok, err := fresh.IsAncestor(ctx, tip, tip)
	if err == nil {
		t.Fatalf("IsAncestor on a damaged clone = %t, nil; want an error", ok)
	}
}
