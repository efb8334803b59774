package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/throughline-dev/throughline/internal/gittest"
)

func TestIsAncestor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, dir := newRepo(t)
	first := gittest.Run(t, dir, "rev-parse", "HEAD")
	second, err := r.Commit(ctx, first, map[string][]byte{"b.yaml": []byte("b: 1\n")}, "second")
	if err != nil {
		t.Fatal(err)
	}
	sibling, err := r.Commit(ctx, first, map[string][]byte{"c.yaml": []byte("c: 1\n")}, "sibling")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		a, b    string
		want    bool
		wantErr bool
	}{
		{"parent", first, second, true, false},
		{"itself", second, second, true, false},
		{"child is not an ancestor", second, first, false, false},
		{"sibling", sibling, second, false, false},
		{"unknown commit", "0123456789abcdef0123456789abcdef01234567", second, false, false},
		{"an option is not a revision", "--all", second, false, true},
		{"empty", "", second, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.IsAncestor(ctx, tc.a, tc.b)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("IsAncestor = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	// A broken repository is an error, not a "no".
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := r.IsAncestor(ctx, first, second); err == nil {
		t.Errorf("IsAncestor in a broken repository = %v, nil; want an error", got)
	}
}

func TestListTreeAndFileHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, dir := newRepo(t)
	first := gittest.Run(t, dir, "rev-parse", "HEAD")
	odd := "promotion/check out/pro\tduction.yaml" // spaces and a tab: strings.Fields would split it
	second, err := r.Commit(ctx, first, map[string][]byte{
		odd:                         []byte("x: 1\n"),
		"promotion/checkout/a.yaml": []byte("a: 1\n"),
		"a.yaml":                    []byte("a: 2\n"),
	}, "second")
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ListTree(ctx, second, "promotion")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{odd, "promotion/checkout/a.yaml"}; !slices.Equal(got, want) {
		t.Errorf("ListTree(promotion) = %q, want %q", got, want)
	}
	all, err := r.ListTree(ctx, second, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Errorf("ListTree(.) = %q, want the 3 files of the GitOps root", all)
	}
	none, err := r.ListTree(ctx, second, "no/such/dir")
	if err != nil || len(none) != 0 {
		t.Errorf("ListTree(missing dir) = %q, %v; want nothing", none, err)
	}
	if _, err := r.ListTree(ctx, "no-such-rev", "promotion"); err == nil {
		t.Error("ListTree at an unknown revision: no error")
	}
	hist, err := r.FileHistory(ctx, second, "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{second, first}; !slices.Equal(hist, want) {
		t.Errorf("FileHistory(a.yaml) = %q, want %q", hist, want)
	}
	if hist, err := r.FileHistory(ctx, second, odd); err != nil || !slices.Equal(hist, []string{second}) {
		t.Errorf("FileHistory(%q) = %q, %v", odd, hist, err)
	}
}

// TestListTreeAtTheRepositoryRoot: a GitOps root that is the repository's
// own root (no prefix) lists every file. git 2.39 lists nothing for
// "ls-tree --end-of-options REV --" without a pathspec, which made the
// repository check see no overlay at all.
func TestListTreeAtTheRepositoryRoot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dir := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	if r.Prefix != "" {
		t.Fatalf("prefix %q, want none", r.Prefix)
	}
	all, err := r.ListTree(ctx, "HEAD", ".")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sub/a.yaml"}; !slices.Equal(all, want) {
		t.Errorf("ListTree(.) at the repository root = %q, want %q", all, want)
	}
}

// TestLinearFileHistoryMatchesGit: on a history without merges, the
// histories read off one pass (linearFrom, from the second whole walk from
// a commit on) are git log's, for a file changed, deleted and re-created,
// a directory removed whole and replaced by a file and back, a file of the
// root commit, and a path never there; at every commit of the history as
// the start, in process and in a GitOps root below the top.
func TestLinearFileHistoryMatchesGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	gittest.Init(t, dir)
	steps := []map[string]string{
		{"gitops/promotion/shop/staging.yaml": "v: 1\n", "gitops/apps/shop/base/deploy.yaml": "kind: Deployment\n"},
		{"gitops/zz.yaml": "top: 1\n"},
		{"gitops/promotion/shop/staging.yaml": "v: 2\n"},
		{"gitops/promotion/shop/staging.yaml": ""},
		{"gitops/promotion/shop/staging.yaml": "v: 3\n", "gitops/promotion/shop/prod.yaml": "v: 1\n"},
		{"gitops/apps/shop/base/deploy.yaml": ""},
		{"gitops/apps/shop/base": "not a directory\n"},
		{"gitops/apps/shop/base": ""},
		{"gitops/apps/shop/base/deploy.yaml": "kind: StatefulSet\n"},
		{"gitops/zz.yaml": "top: 2\n"},
	}
	var commits []string
	for i, files := range steps {
		for p, body := range files {
			if body == "" {
				gittest.Run(t, dir, "rm", "-q", "-r", p)
				delete(files, p)
			}
		}
		commits = append(commits, gittest.Commit(t, dir, fmt.Sprint("step ", i), files))
	}
	cli, err := Open(ctx, filepath.Join(dir, "gitops"))
	must(t, err)
	fast, err := Open(ctx, filepath.Join(dir, "gitops"))
	must(t, err)
	must(t, fast.ReadInProcess())
	paths := []string{"promotion/shop/staging.yaml", "promotion/shop/prod.yaml", "apps/shop/base/deploy.yaml", "apps/shop/base", "zz.yaml",
		"no/such/file"}
	for _, start := range commits {
		for round := range 2 { // the second round answers from the linear history
			for _, p := range paths {
				want, err := cli.FileHistory(ctx, start, p)
				must(t, err)
				got, err := fast.FileHistory(ctx, start, p)
				must(t, err)
				if !slices.Equal(got, want) {
					t.Errorf("round %d, at %s: FileHistory(%s) = %v, git %v", round, Short(start), p, got, want)
				}
			}
			fast.reads.index.histories = nil // not the remembered answers: the linear history
		}
		if fast.reads.index.linear[plumbing.NewHash(start)] == nil {
			t.Errorf("at %s: no linear history was read", Short(start))
		}
	}
}

// TestReadAfterHistoryMatchesGit reads a path at every commit of its
// history after the walk has diffed them (the in-process reader then takes
// a changed file's entry from the diff, not from its trees): what it reads
// must be what git cat-file says, through every kind of change a hostile
// commit can make to a path (a link in its place, a directory, a mode,
// a deletion): a link is still refused, a directory is an error (never
// "no such file") as through git.
func TestReadAfterHistoryMatchesGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dir := newRepo(t)
	sub := filepath.Join(dir, "sub")
	step := func(msg string, change func()) {
		t.Helper()
		change()
		gittest.Run(t, dir, "add", "-A")
		gittest.Run(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
	}
	write := func(p, data string, mode os.FileMode) func() {
		return func() {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(sub, p)), 0o755))
			must(t, os.WriteFile(filepath.Join(sub, p), []byte(data), mode))
			must(t, os.Chmod(filepath.Join(sub, p), mode))
		}
	}
	remove := func(p string) func() { return func() { must(t, os.RemoveAll(filepath.Join(sub, p))) } }
	step("added", write("p/r.yaml", "r: 1\n", 0o644))
	step("changed", write("p/r.yaml", "r: 2\n", 0o644))
	step("a link in its place", func() { remove("p/r.yaml")(); must(t, os.Symlink("../a.yaml", filepath.Join(sub, "p/r.yaml"))) })
	step("a file again", func() { remove("p/r.yaml")(); write("p/r.yaml", "r: 3\n", 0o644)() })
	step("executable, same content", write("p/r.yaml", "r: 3\n", 0o755))
	step("deleted", remove("p/r.yaml"))
	step("a directory in its place", write("p/r.yaml/x.yaml", "x: 1\n", 0o644))
	step("the directory removed with p", remove("p"))
	step("back as a file", write("p/r.yaml", "r: 4\n", 0o644))
	step("another file only", write("other.yaml", "o: 1\n", 0o644))

	cli, err := Open(ctx, sub)
	must(t, err)
	fast, err := Open(ctx, sub)
	must(t, err)
	must(t, fast.ReadInProcess())
	for _, p := range []string{"p/r.yaml", "p/r.yaml/x.yaml"} {
		if _, err := fast.FileHistory(ctx, "HEAD", p); err != nil { // the walk diffs every commit
			t.Fatal(err)
		}
	}
	commits := strings.Fields(gittest.Run(t, dir, "rev-list", "HEAD"))
	for _, c := range commits {
		for _, p := range []string{"p/r.yaml", "p/r.yaml/x.yaml", "p"} {
			want, werr := cli.ReadFile(ctx, c, p)
			got, gerr := fast.ReadFile(ctx, c, p)
			msg := gittest.Run(t, dir, "log", "-1", "--format=%s", c)
			if string(got) != string(want) || (werr == nil) != (gerr == nil) ||
				errors.Is(gerr, ErrSymlink) != errors.Is(werr, ErrSymlink) || errors.Is(gerr, ErrNotFound) != errors.Is(werr, ErrNotFound) {
				t.Errorf("%s at %q: in process %q, %v; git %q, %v", p, msg, got, gerr, want, werr)
			}
		}
	}
}
