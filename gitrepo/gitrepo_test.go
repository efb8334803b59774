package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/throughline-dev/throughline/internal/gittest"
)

// newRepo makes a work tree with the GitOps root in sub/ and one commit.
func newRepo(t *testing.T) (*Repo, string) {
	t.Helper()
	dir := t.TempDir()
	gittest.Init(t, dir)
	gittest.Commit(t, dir, "init", map[string]string{"sub/a.yaml": "a: 1\n"})
	r, err := Open(context.Background(), filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	r.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	return r, dir
}

func TestCommitLeavesWorkTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, dir := newRepo(t)
	if r.Prefix != "sub/" || r.Remote != "" {
		t.Fatalf("prefix %q remote %q", r.Prefix, r.Remote)
	}
	head, err := r.Resolve(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := r.Commit(ctx, head, map[string][]byte{"promotion/app/prod.yaml": []byte("x: 1\n")}, "add record")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "promotion")); !os.IsNotExist(err) {
		t.Fatal("the commit wrote into the work tree")
	}
	if st := gittest.Run(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("work tree or index changed: %q", st)
	}
	data, err := r.ReadFile(ctx, sha, "promotion/app/prod.yaml")
	if err != nil || string(data) != "x: 1\n" {
		t.Fatalf("read back %q, %v", data, err)
	}
	if _, err := r.ReadFile(ctx, head, "promotion/app/prod.yaml"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	files, err := r.Changed(ctx, head, sha)
	if err != nil || len(files) != 1 || files[0] != "sub/promotion/app/prod.yaml" {
		t.Fatalf("changed %v %v", files, err)
	}
	// A branch is created once; a second creation loses.
	if err := r.SetBranch(ctx, "throughline/promote/x", "", sha); err != nil {
		t.Fatal(err)
	}
	if err := r.SetBranch(ctx, "throughline/promote/x", "", head); !errors.Is(err, ErrRejected) {
		t.Fatalf("second creation: %v", err)
	}
	bs, err := r.Branches(ctx, "throughline/promote/*")
	if err != nil || bs["throughline/promote/x"] != sha {
		t.Fatalf("branches %v %v", bs, err)
	}
	root, err := r.Export(ctx, sha, filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "promotion", "app", "prod.yaml")); err != nil {
		t.Fatalf("export: %v", err)
	}
}

// TestUpdateRetriesNonFastForward: another writer moves the branch between
// our fetch and our push; the push is rejected (never forced), Update
// fetches and re-applies on the new tip, and both changes survive.
func TestUpdateRetriesNonFastForward(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dir := newRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	gittest.Run(t, dir, "init", "-q", "--bare", "-b", "main", bare)
	gittest.Run(t, bare, "config", "receive.denyNonFastForwards", "true")
	gittest.Run(t, dir, "remote", "add", "origin", bare)
	gittest.Run(t, dir, "push", "-q", "origin", "main")
	r, err := Open(ctx, filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	gittest.Run(t, filepath.Dir(other), "clone", "-q", bare, other)
	var calls atomic.Int32
	sha, err := r.Update(ctx, "main", 3, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		if calls.Add(1) == 1 {
			// The race: someone else lands first.
			gittest.Commit(t, other, "other", map[string]string{"sub/b.yaml": "b: 1\n"})
			gittest.Run(t, other, "push", "-q", "origin", "main")
		}
		return map[string][]byte{"c.yaml": []byte("c: 1\n")}, "ours", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Fatalf("change applied %d times, want 2 (once rejected, once on the new tip)", calls.Load())
	}
	if got := gittest.Run(t, bare, "rev-parse", "main"); got != sha {
		t.Fatalf("remote main %s, want %s", got, sha)
	}
	for _, f := range []string{"sub/b.yaml", "sub/c.yaml"} {
		gittest.Run(t, bare, "cat-file", "-e", sha+":"+f)
	}
}

// TestUpdateDeclinedByHookIsNotRetried: a pre-receive hook refuses the push
// (a freeze): not a lost race, so Update stops at once with a
// *DeclinedError carrying what the remote said.
func TestUpdateDeclinedByHookIsNotRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dir := newRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	gittest.Run(t, dir, "init", "-q", "--bare", "-b", "main", bare)
	gittest.Run(t, dir, "remote", "add", "origin", bare)
	gittest.Run(t, dir, "push", "-q", "origin", "main")
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'change freeze until Monday' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	_, err = r.Update(ctx, "main", 3, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		calls.Add(1)
		return map[string][]byte{"c.yaml": []byte("c: 1\n")}, "ours", nil
	})
	var de *DeclinedError
	if !errors.As(err, &de) || errors.Is(err, ErrRejected) || de.Branch != "main" || !strings.Contains(de.Reason, "change freeze until Monday") ||
		!strings.Contains(de.Reason, "pre-receive hook declined") {
		t.Fatalf("want a DeclinedError with the hook's message: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("change applied %d times, want 1 (a declined push is not a race)", calls.Load())
	}
}

// TestReadFile: one git process per read; a missing file or revision is
// ErrNotFound, anything else (a directory, a broken repository) is an error
// of its own, and contents come back byte for byte.
func TestReadFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newRepo(t)
	head, err := r.Resolve(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	binary := []byte("no newline at the end\x00\xff\n\n missing:")
	sha, err := r.Commit(ctx, head, map[string][]byte{"bin/blob": binary, "empty": {}}, "files")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rev, path string
		want      []byte
		notFound  bool
	}{
		{sha, "bin/blob", binary, false},
		{sha, "empty", []byte{}, false},
		{sha, "a.yaml", []byte("a: 1\n"), false},
		{sha, "nope.yaml", nil, true},
		{head, "bin/blob", nil, true},
		{strings.Repeat("0", 40), "a.yaml", nil, true},
		{sha, "bin", nil, false}, // a directory: an error, not "missing"
	} {
		got, err := r.ReadFile(ctx, c.rev, c.path)
		switch {
		case c.notFound:
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s at %.7s: %v, want ErrNotFound", c.path, c.rev, err)
			}
		case c.want == nil:
			if err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("%s at %.7s: %v, want an error other than ErrNotFound", c.path, c.rev, err)
			}
		case err != nil || string(got) != string(c.want):
			t.Errorf("%s at %.7s: %q %v, want %q", c.path, c.rev, got, err, c.want)
		}
	}
	// A repository git cannot read is a failure, not a missing file.
	broken := *r
	broken.Top = t.TempDir()
	if _, err := broken.ReadFile(ctx, sha, "a.yaml"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("broken repository: %v, want an error other than ErrNotFound", err)
	}
}

// TestReadFileBounded: a file over the read limit (a pull request can
// commit one where a gate reads a policy, a key or an approvals file) is
// an error naming the limit, through git and in process alike, and is
// never held in memory whole.
func TestReadFileBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newRepo(t)
	head, err := r.Resolve(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := r.Commit(ctx, head, map[string][]byte{"allowed-signers": make([]byte, maxBlob+1),
		"keys/huge.pub": make([]byte, maxBlob+4096), "small": []byte("ok\n")}, "a huge file")
	if err != nil {
		t.Fatal(err)
	}
	check := func(how string, r *Repo) {
		t.Helper()
		for _, f := range []string{"allowed-signers", "keys/huge.pub"} { // one byte over; past git's output cap
			if _, err := r.ReadFile(ctx, sha, f); err == nil || !strings.Contains(err.Error(), "limit") {
				t.Errorf("%s: %s: %v, want the limit", how, f, err)
			}
		}
		if b, err := r.ReadFile(ctx, sha, "small"); err != nil || string(b) != "ok\n" {
			t.Errorf("%s: small file: %q %v", how, b, err)
		}
	}
	check("git cat-file", r)
	if err := r.ReadInProcess(); err != nil {
		t.Fatal(err)
	}
	check("in process", r)
}

// TestReadFileSymlink: a committed symbolic link is ErrSymlink through git
// and in process alike (both would otherwise answer the link's text as
// the file's content), at the GitOps root and below it; the file beside
// it, a file under a same-named directory and a missing one read as before.
func TestReadFileSymlink(t *testing.T) {
	ctx := context.Background()
	r, dir := newRepo(t)
	for _, l := range []string{"sub/link.yaml", "sub/clusters/link.yaml"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, l)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("a.yaml", filepath.Join(dir, filepath.FromSlash(l))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "clusters", "app.yaml"), []byte("b: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "add", ".")
	gittest.Run(t, dir, "commit", "-q", "-m", "links")
	check := func(how string) {
		t.Helper()
		for _, l := range []string{"link.yaml", "clusters/link.yaml"} {
			if b, err := r.ReadFile(ctx, "HEAD", l); !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), l) {
				t.Errorf("%s: %s: %q %v, want ErrSymlink naming it", how, l, b, err)
			}
		}
		for f, want := range map[string]string{"a.yaml": "a: 1\n", "clusters/app.yaml": "b: 2\n"} {
			if b, err := r.ReadFile(ctx, "HEAD", f); err != nil || string(b) != want {
				t.Errorf("%s: %s: %q %v", how, f, b, err)
			}
		}
		for _, f := range []string{"nope/x.yaml", "a.yaml/x", "clusters/nope.yaml"} {
			if _, err := r.ReadFile(ctx, "HEAD", f); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: %s: %v, want ErrNotFound", how, f, err)
			}
		}
	}
	check("git cat-file")
	if err := r.ReadInProcess(); err != nil {
		t.Fatal(err)
	}
	check("in process")
}

// TestExportIgnoresAttributes: a pull request's .gitattributes must not
// change what is exported (git archive leaves export-ignore files out and
// rewrites $Format:...$ under export-subst); Argo CD and Flux check out
// the committed blobs, so the gate judges those. Links stay links,
// executables executable.
func TestExportIgnoresAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, dir := newRepo(t)
	gittest.Write(t, dir, map[string]string{
		"sub/.gitattributes":   "hidden.yaml export-ignore\nsubst.yaml export-subst\n",
		"sub/hidden.yaml":      "kind: ConfigMap\n",
		"sub/subst.yaml":       "path: $Format:%s$\n",
		"sub/bin/run.sh":       "#!/bin/sh\n",
		"outside/other.yaml":   "x: 1\n",
		"sub/nested/deep.yaml": "d: 1\n",
	})
	if err := os.Chmod(filepath.Join(dir, "sub", "bin", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.yaml", filepath.Join(dir, "sub", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	sha := gittest.Commit(t, dir, "apps/production/overlay", nil)
	for _, how := range []string{"git", "in process"} {
		if how == "in process" {
			if err := r.ReadInProcess(); err != nil {
				t.Fatal(err)
			}
		}
		root, err := r.Export(ctx, sha, filepath.Join(t.TempDir(), "x"))
		if err != nil {
			t.Fatal(err)
		}
		for f, want := range map[string]string{"hidden.yaml": "kind: ConfigMap\n", "subst.yaml": "path: $Format:%s$\n",
			"nested/deep.yaml": "d: 1\n", "a.yaml": "a: 1\n"} {
			if got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f))); err != nil || string(got) != want {
				t.Errorf("%s: %s is %q, %v; want the committed %q", how, f, got, err, want)
			}
		}
		if fi, err := os.Stat(filepath.Join(root, "bin", "run.sh")); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s: bin/run.sh: %v %v, want executable", how, fi, err)
		}
		if target, err := os.Readlink(filepath.Join(root, "link.yaml")); err != nil || target != "a.yaml" {
			t.Errorf("%s: link.yaml: %q %v, want a link to a.yaml", how, target, err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(root), "outside")); !os.IsNotExist(err) {
			t.Errorf("%s: a file outside the GitOps root was exported: %v", how, err)
		}
	}
}
