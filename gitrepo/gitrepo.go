package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Repo is a Git work tree holding a GitOps repository, possibly in a
// subdirectory (Prefix) of the work tree.
type Repo struct {
	// Top is the work tree's top-level directory.
	Top string
	// Prefix is the GitOps root relative to Top, "" or ending in "/".
	Prefix string
	// Remote is the remote pushed to and fetched from ("" when none).
	Remote string
	// Env is added to every git command's environment.
	Env []string
	// sign makes Commit sign its commits (see Signing).
	sign bool
	// mem, when set, is the in-process clone every operation runs on
	// (see Clone); nil runs the git command line.
	mem *inProcess
	// reads, when set, is the work tree's repository opened with go-git:
	// its reads run in process (see ReadInProcess).
	reads *inProcess
}

// reader is the in-process repository reads run on (nil: git).
func (r *Repo) reader() *inProcess {
	if r.mem != nil {
		return r.mem
	}
	return r.reads
}

// ErrNotFound is wrapped when a file or reference does not exist.
var ErrNotFound = errors.New("not found")

// ErrRejected is wrapped when a compare-and-swap update lost the race (a
// non-fast-forward push, or a local reference that moved).
var ErrRejected = errors.New("rejected: the reference moved")

// ErrUnchanged is wrapped when a push found the branch already at the
// pushed commit: someone else made and pushed the very same commit first.
var ErrUnchanged = errors.New("the branch already points at this commit")

// DeclinedError is a push the remote refused for a reason of its own (a
// server-side hook: a freeze, a branch protection), not a lost race: it is
// not retried. Reason is what the remote said.
type DeclinedError struct {
	Branch, Remote, Reason string
}

func (e *DeclinedError) Error() string {
	return fmt.Sprintf("push %s to %s: the remote declined it: %s", e.Branch, e.Remote, e.Reason)
}

// Error is a git command that failed.
type Error struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *Error) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Stderr))
}

func (e *Error) Unwrap() error { return e.Err }

// Open opens the work tree containing dir; dir is the GitOps root. The
// remote is "origin" when it exists.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", dir, err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("open repository %s: %w: %w", dir, ErrNoGitCLI, err)
	}
	r := &Repo{Top: abs}
	top, err := r.run(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("open repository %s: not a Git work tree: %w", dir, err)
	}
	prefix, err := r.run(ctx, nil, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", dir, err)
	}
	r.Top, r.Prefix = strings.TrimSpace(top), strings.TrimSpace(prefix)
	remotes, err := r.run(ctx, nil, "remote")
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", dir, err)
	}
	for _, l := range strings.Fields(remotes) {
		if l == "origin" {
			r.Remote = "origin"
		}
	}
	return r, nil
}

// Root is the GitOps root directory in the work tree.
func (r *Repo) Root() string { return filepath.Join(r.Top, filepath.FromSlash(r.Prefix)) }

// Git runs git in the work tree and returns its standard output.
func (r *Repo) Git(ctx context.Context, args ...string) (string, error) {
	return r.run(ctx, nil, args...)
}

func (r *Repo) run(ctx context.Context, env []string, args ...string) (string, error) {
	out, err := r.runBytes(ctx, env, nil, args...)
	return string(out), err
}

func (r *Repo) runBytes(ctx context.Context, env []string, stdin []byte, args ...string) ([]byte, error) {
	return r.runCapped(ctx, env, stdin, -1, args...)
}

// errTooLarge is the error of a git command whose output passed its cap.
var errTooLarge = errors.New("output over the limit")

// cappedBuffer is a buffer that refuses to grow past max bytes (max < 0:
// unbounded): git, writing more, gets a broken pipe and the command fails
// with errTooLarge instead of filling memory.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.max >= 0 && c.Len()+len(p) > c.max {
		c.over = true
		return 0, errTooLarge
	}
	return c.Buffer.Write(p)
}

// runCapped is runBytes whose stdout may be at most limit bytes (-1: any).
func (r *Repo) runCapped(ctx context.Context, env []string, stdin []byte, limit int, args ...string) ([]byte, error) {
	if r.mem != nil {
		return nil, &Error{Args: args, Err: ErrNeedsGitCLI}
	}
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.quotepath=off"}, args...)...)
	cmd.Dir = r.Top
	cmd.Env = append(append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), r.Env...), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stdout := &cappedBuffer{max: limit}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case stdout.over: // git died of the broken pipe, or the copy failed
			err = errTooLarge
		}
		return stdout.Bytes(), &Error{Args: args, Err: err, Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// full is a GitOps-root-relative path as a work-tree path.
func (r *Repo) full(p string) string { return r.Prefix + strings.TrimPrefix(path.Clean(p), "./") }

// Resolve returns the commit id of rev.
func (r *Repo) Resolve(ctx context.Context, rev string) (string, error) {
	if m := r.reader(); m != nil {
		unlock := m.lock()
		h, err := m.resolve(rev)
		unlock()
		if err == nil || r.mem != nil {
			return h.String(), err
		}
		// A work tree's git parses revisions go-git does not (HEAD@{1}, ...).
	}
	out, err := r.run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("revision %s: %w", rev, ErrNotFound)
	}
	return strings.TrimSpace(out), nil
}

// ReadFile reads the GitOps-root-relative file p at rev; a missing file
// wraps ErrNotFound and fs.ErrNotExist.
func (r *Repo) ReadFile(ctx context.Context, rev, p string) ([]byte, error) {
	if m := r.reader(); m != nil {
		defer m.lock()()
		return m.readFile(rev, r.full(p))
	}
	full := r.full(p)
	dir, name := path.Split(full)
	spec := rev + ":" + full
	if strings.ContainsAny(spec, "\n\x00") {
		return nil, fmt.Errorf("reading %q at %s: a path with a newline or NUL", p, rev)
	}
	// One process: cat-file --batch answers "<spec> missing" for a missing
	// object, so a failing git is not mistaken for a missing file. The
	// file's directory comes first: its tree says the file's mode (git
	// would answer a symbolic link's blob, the link's text, like a file's).
	// The same bound as the in-process reader: a blob over maxBlob (and its
	// header) is never held in memory whole.
	in := rev + ":" + strings.TrimSuffix(dir, "/") + "\n" + spec + "\n"
	out, err := r.runCapped(ctx, nil, []byte(in), maxTree+maxBlob+2048, "cat-file", "--batch")
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("reading %s at %s: over the %d-byte limit", p, rev, maxBlob)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", p, rev, err)
	}
	header, body, _ := bytes.Cut(out, []byte{'\n'})
	f := strings.Fields(string(header))
	switch {
	case len(f) == 2 && f[1] == "missing":
		out = body // no such directory: the second answer says the file is missing too
	case len(f) != 3:
		return nil, fmt.Errorf("reading %s at %s: unexpected answer %q from git cat-file", p, rev, header)
	case f[1] != "tree": // a file where a directory would be: no such file
		return nil, fmt.Errorf("%s at %s: %w (%w)", p, rev, ErrNotFound, fs.ErrNotExist)
	default:
		size, err := strconv.Atoi(f[2])
		if err != nil || size < 0 || size > maxTree || len(body) < size+1 {
			return nil, fmt.Errorf("reading %s at %s: git cat-file announced %q bytes for its directory, sent %d", p, rev, f[2], len(body))
		}
		if treeEntryMode(body[:size], name, len(f[0])/2) == "120000" {
			return nil, fmt.Errorf("reading %s at %s: %w", p, rev, ErrSymlink)
		}
		out = body[size+1:]
	}
	header, body, _ = bytes.Cut(out, []byte{'\n'})
	f = strings.Fields(string(header))
	switch {
	case len(f) == 2 && f[1] == "missing":
		return nil, fmt.Errorf("%s at %s: %w (%w)", p, rev, ErrNotFound, fs.ErrNotExist)
	case len(f) != 3:
		return nil, fmt.Errorf("reading %s at %s: unexpected answer %q from git cat-file", p, rev, header)
	case f[1] != "blob":
		return nil, fmt.Errorf("reading %s at %s: a %s, not a file", p, rev, f[1])
	}
	size, err := strconv.Atoi(f[2])
	if err == nil && size > maxBlob {
		return nil, fmt.Errorf("reading %s at %s: %d bytes, over the %d-byte limit", p, rev, size, maxBlob)
	}
	if err != nil || size < 0 || len(body) < size {
		return nil, fmt.Errorf("reading %s at %s: git cat-file announced %q bytes, sent %d", p, rev, f[2], len(body))
	}
	return body[:size:size], nil
}

// maxTree bounds the directory listing ReadFile reads through git to learn
// a file's mode (a directory of about 100,000 entries).
const maxTree = 8 << 20

// ErrSymlink is wrapped by ReadFile's error for a path that is a symbolic
// link at the revision, in process and through git alike: its content
// would be another file's, or a file outside the repository.
var ErrSymlink = errors.New("a symbolic link: throughline never follows one")

// treeEntryMode is the mode of the entry name in the raw tree object tree
// (git's "<octal mode> <name>\x00<hashLen-byte id>" entries), "" when it
// has none.
func treeEntryMode(tree []byte, name string, hashLen int) string {
	for len(tree) > 0 {
		sp, nul := bytes.IndexByte(tree, ' '), bytes.IndexByte(tree, 0)
		if sp < 0 || nul < sp || len(tree) < nul+1+hashLen {
			return ""
		}
		if string(tree[sp+1:nul]) == name {
			return string(tree[:sp])
		}
		tree = tree[nul+1+hashLen:]
	}
	return ""
}

// Export writes the tree of rev into dst (which must be empty or absent)
// and returns the GitOps root inside it. It writes the committed blobs as
// they are, read in process: no attribute of the tree applies (git archive
// would honour a pull request's .gitattributes, leaving files out with
// export-ignore and rewriting them with export-subst, so that what is
// judged is not what Argo CD or Flux check out). Symbolic links are
// written as links (the renderer refuses one that leaves its root);
// submodules as empty directories.
func (r *Repo) Export(ctx context.Context, rev, dst string) (string, error) {
	sha, err := r.Resolve(ctx, rev)
	if err != nil {
		return "", fmt.Errorf("export %s: %w", rev, err)
	}
	m := r.reader()
	if m == nil {
		m = &inProcess{}
		if err := m.reopen(r.Top); err != nil {
			return "", fmt.Errorf("export %s: open %s in process: %w", rev, r.Top, err)
		}
		defer m.close()
	} else {
		defer m.lock()()
	}
	t, err := m.tree(sha)
	if err == nil && r.Prefix != "" {
		t, err = t.Tree(strings.TrimSuffix(r.Prefix, "/"))
	}
	if err != nil {
		return "", fmt.Errorf("export %s: %w", rev, err)
	}
	root := filepath.Join(dst, filepath.FromSlash(r.Prefix))
	if err := writeTree(ctx, m.repo, t, root); err != nil {
		return "", fmt.Errorf("export %s to %s: %w", rev, dst, err)
	}
	return root, nil
}

// writeTree writes every entry of t under dir.
func writeTree(ctx context.Context, repo *gogit.Repository, t *object.Tree, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if name == "" || strings.HasPrefix(name, "../") || path.IsAbs(name) || path.Clean(name) != name {
			return fmt.Errorf("tree entry %q escapes the destination", name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch e.Mode {
		case filemode.Dir, filemode.Submodule:
			err = os.MkdirAll(p, 0o755)
		case filemode.Symlink:
			err = writeLink(repo, e.Hash, p)
		default: // regular, executable, the deprecated group-writable mode
			perm := os.FileMode(0o644)
			if e.Mode == filemode.Executable {
				perm = 0o755
			}
			err = writeBlob(repo, e.Hash, p, perm)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func writeBlob(repo *gogit.Repository, h plumbing.Hash, p string, perm os.FileMode) error {
	b, err := repo.BlobObject(h)
	if err != nil {
		return err
	}
	rd, err := b.Reader()
	if err != nil {
		return err
	}
	defer func() { _ = rd.Close() }() // read only
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rd)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeLink(repo *gogit.Repository, h plumbing.Hash, p string) error {
	b, err := repo.BlobObject(h)
	if err != nil {
		return err
	}
	if b.Size > 4096 {
		return fmt.Errorf("symbolic link target of %d bytes", b.Size)
	}
	rd, err := b.Reader()
	if err != nil {
		return err
	}
	defer func() { _ = rd.Close() }() // read only
	target, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	return os.Symlink(string(target), p)
}

// Changed lists the files that differ between base and head, as work-tree
// paths (not relative to the GitOps root: a change outside it is a change
// too), sorted.
func (r *Repo) Changed(ctx context.Context, base, head string) ([]string, error) {
	out, err := r.run(ctx, nil, "diff", "--name-only", "--no-renames", "-z", base, head, "--")
	if err != nil {
		return nil, fmt.Errorf("diff %s..%s: %w", base, head, err)
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return files, nil
}

// Rel makes a work-tree path relative to the GitOps root; ok is false when
// it is outside it.
func (r *Repo) Rel(p string) (string, bool) {
	if r.Prefix == "" {
		return p, true
	}
	rel, ok := strings.CutPrefix(p, r.Prefix)
	return rel, ok
}

// Commit builds a commit on parent that sets files (GitOps-root-relative
// paths to content) and returns its id. Neither the work tree, nor the
// index, nor any reference changes. A Signing repository signs it.
func (r *Repo) Commit(ctx context.Context, parent string, files map[string][]byte, message string) (string, error) {
	if r.mem != nil {
		if r.sign {
			return "", fmt.Errorf("a signed commit on %s: %w", parent, ErrNeedsGitCLI)
		}
		defer r.mem.lock()()
		full := make(map[string][]byte, len(files))
		for p, data := range files {
			full[r.full(p)] = data
		}
		return r.mem.commit(parent, full, message)
	}
	tmp, err := os.MkdirTemp("", "throughline-index-")
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a scratch index; a leftover is harmless
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := r.run(ctx, env, "read-tree", parent); err != nil {
		return "", fmt.Errorf("commit on %s: %w", parent, err)
	}
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		blob, err := r.runBytes(ctx, nil, files[p], "hash-object", "-w", "--stdin")
		if err != nil {
			return "", fmt.Errorf("commit %s: %w", p, err)
		}
		info := "100644," + strings.TrimSpace(string(blob)) + "," + r.full(p)
		if _, err := r.run(ctx, env, "update-index", "--add", "--cacheinfo", info); err != nil {
			return "", fmt.Errorf("commit %s: %w", p, err)
		}
	}
	tree, err := r.run(ctx, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	args := []string{"commit-tree", strings.TrimSpace(tree), "-p", parent}
	if r.sign {
		args = append([]string{"-c", "gpg.format=ssh", "commit-tree", "-S"}, args[1:]...)
	}
	out, err := r.runBytes(ctx, r.identity(ctx), []byte(message), args...)
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// identity supplies a committer when neither the environment nor git's
// config names one (a CI runner often has neither).
func (r *Repo) identity(ctx context.Context) []string {
	if os.Getenv("GIT_COMMITTER_NAME") != "" || os.Getenv("GIT_AUTHOR_NAME") != "" {
		return nil
	}
	if out, err := r.run(ctx, nil, "config", "user.email"); err == nil && strings.TrimSpace(out) != "" {
		return nil
	}
	return []string{
		"GIT_AUTHOR_NAME=throughline", "GIT_AUTHOR_EMAIL=throughline@localhost",
		"GIT_COMMITTER_NAME=throughline", "GIT_COMMITTER_EMAIL=throughline@localhost",
	}
}

// Fetch updates the remote-tracking references (no-op without a remote).
func (r *Repo) Fetch(ctx context.Context) error {
	if r.mem != nil {
		defer r.mem.lock()()
		return r.mem.fetch(ctx)
	}
	if r.Remote == "" {
		return nil
	}
	if _, err := r.run(ctx, nil, "fetch", "--quiet", "--prune", r.Remote); err != nil {
		return fmt.Errorf("fetch %s: %w", r.Remote, err)
	}
	if r.reads != nil {
		// git may have written new packs: go-git lists them when opened.
		defer r.reads.lock()()
		return r.reads.reopen(r.Top)
	}
	return nil
}

// Branches lists the branches matching glob, where "*" matches any text,
// "/" included (e.g. "throughline/promote/app/*"), with their commits: on
// the remote when there is one, else locally.
func (r *Repo) Branches(ctx context.Context, glob string) (map[string]string, error) {
	out := map[string]string{}
	if r.mem != nil {
		unlock := r.mem.lock()
		bs, err := r.mem.branches(ctx)
		unlock()
		if err != nil {
			return nil, fmt.Errorf("list branches %s: %w", glob, err)
		}
		for name, sha := range bs {
			if globMatch(glob, name) {
				out[name] = sha
			}
		}
		return out, nil
	}
	var text string
	var err error
	if r.Remote != "" {
		text, err = r.run(ctx, nil, "ls-remote", "--heads", r.Remote)
	} else {
		text, err = r.run(ctx, nil, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
	}
	if err != nil {
		return nil, fmt.Errorf("list branches %s: %w", glob, err)
	}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		name := strings.TrimPrefix(f[1], "refs/heads/")
		if globMatch(glob, name) {
			out[name] = f[0]
		}
	}
	return out, nil
}

// globMatch matches name against a pattern whose "*" matches any text.
func globMatch(glob, name string) bool {
	parts := strings.Split(glob, "*")
	if len(parts) == 1 {
		return glob == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	rest := name[len(parts[0]):]
	for i := 1; i < len(parts)-1; i++ {
		j := strings.Index(rest, parts[i])
		if j < 0 {
			return false
		}
		rest = rest[j+len(parts[i]):]
	}
	return strings.HasSuffix(rest, parts[len(parts)-1])
}

// BranchTip is the commit of branch (on the remote after a fetch when there
// is one), wrapping ErrNotFound when it does not exist.
func (r *Repo) BranchTip(ctx context.Context, branch string) (string, error) {
	if r.mem != nil {
		defer r.mem.lock()()
		return r.mem.branchTip(ctx, branch)
	}
	if r.Remote != "" {
		bs, err := r.Branches(ctx, branch)
		if err != nil {
			return "", err
		}
		sha, ok := bs[branch]
		if !ok {
			return "", fmt.Errorf("branch %s on %s: %w", branch, r.Remote, ErrNotFound)
		}
		// Make the commit available locally.
		if _, err := r.run(ctx, nil, "fetch", "--quiet", r.Remote, "refs/heads/"+branch); err != nil {
			return "", fmt.Errorf("fetch %s: %w", branch, err)
		}
		return sha, nil
	}
	return r.Resolve(ctx, "refs/heads/"+branch)
}

// SetBranch moves branch from old ("" when it must not exist yet) to sha:
// a push that the remote accepts only as a creation or a fast-forward, else
// a local compare-and-swap update-ref. Losing the race wraps ErrRejected;
// finding the branch already at sha on the remote wraps ErrUnchanged.
// It never forces.
func (r *Repo) SetBranch(ctx context.Context, branch, old, sha string) error {
	if r.mem != nil {
		defer r.mem.lock()()
		return r.mem.push(ctx, branch, old, sha)
	}
	if r.Remote != "" {
		if old != "" {
			if _, err := r.run(ctx, nil, "merge-base", "--is-ancestor", old, sha); err != nil {
				return fmt.Errorf("push %s: %s does not descend from %s: %w", branch, sha, old, ErrRejected)
			}
		}
		out, err := r.run(ctx, nil, "push", "--porcelain", r.Remote, sha+":refs/heads/"+branch)
		if err != nil {
			var ge *Error
			if errors.As(err, &ge) && strings.Contains(ge.Stderr+out, "hook declined") {
				return &DeclinedError{Branch: branch, Remote: r.Remote, Reason: remoteSaid(ge.Stderr + "\n" + out)}
			}
			if errors.As(err, &ge) && rejected(ge.Stderr+out) {
				return fmt.Errorf("push %s to %s: %w", branch, r.Remote, ErrRejected)
			}
			return fmt.Errorf("push %s to %s: %w", branch, r.Remote, err)
		}
		// Porcelain: "=" flags a reference that was already up to date.
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "=\t") && strings.Contains(l, ":refs/heads/"+branch+"\t") {
				return fmt.Errorf("push %s to %s: %w", branch, r.Remote, ErrUnchanged)
			}
		}
		return nil
	}
	ref := "refs/heads/" + branch
	want := old
	if want == "" {
		want = strings.Repeat("0", len(sha))
	}
	if cur, _ := r.run(ctx, nil, "symbolic-ref", "--quiet", "HEAD"); strings.TrimSpace(cur) == ref {
		// The checked-out branch moves with its work tree, fast-forward only.
		if _, err := r.run(ctx, nil, "merge", "--ff-only", "--quiet", sha); err != nil {
			return fmt.Errorf("fast-forward the checked-out %s: %w", branch, err)
		}
		return nil
	}
	if _, err := r.run(ctx, nil, "update-ref", ref, sha, want); err != nil {
		return fmt.Errorf("update %s: %w (%w)", ref, ErrRejected, err)
	}
	return nil
}

// remoteSaid is the "remote:" lines of a push and its refusal reasons.
func remoteSaid(output string) string {
	var said []string
	for _, l := range strings.Split(output, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "remote:"):
			if m := strings.TrimSpace(strings.TrimPrefix(l, "remote:")); m != "" {
				said = append(said, m)
			}
		case strings.Contains(l, "[remote rejected]"):
			said = append(said, strings.TrimSpace(l[strings.Index(l, "[remote rejected]"):]))
		}
	}
	if len(said) == 0 {
		return strings.TrimSpace(output)
	}
	return strings.Join(said, "; ")
}

func rejected(stderr string) bool {
	for _, s := range []string{
		"[rejected]", "non-fast-forward", "fetch first", "[remote rejected]", "stale info",
		"failed to update ref", "cannot lock ref", "Updates were rejected",
	} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// Update commits a change on the tip of branch and moves the branch by
// compare-and-swap. change gets the current tip and returns the files to
// write and the message; when the update is rejected (someone else moved
// the branch), Update fetches and calls change again on the new tip (a
// rebase that re-applies the change, so its checks run on what is really
// there), up to attempts times. It returns the new commit.
func (r *Repo) Update(
	ctx context.Context, branch string, attempts int,
	change func(ctx context.Context, tip string) (map[string][]byte, string, error),
) (string, error) {
	var last error
	for i := 0; i < max(attempts, 1); i++ {
		if err := r.Fetch(ctx); err != nil {
			return "", err
		}
		tip, err := r.BranchTip(ctx, branch)
		if err != nil {
			return "", err
		}
		files, msg, err := change(ctx, tip)
		if err != nil {
			return "", err
		}
		sha, err := r.Commit(ctx, tip, files, msg)
		if err != nil {
			return "", err
		}
		if err := r.SetBranch(ctx, branch, tip, sha); err != nil {
			if errors.Is(err, ErrUnchanged) {
				return sha, nil
			}
			if errors.Is(err, ErrRejected) {
				last = err
				continue
			}
			return "", err
		}
		return sha, nil
	}
	return "", fmt.Errorf("update %s: gave up after %d attempts: %w", branch, attempts, last)
}

// CurrentBranch is the checked-out branch ("" when detached).
func (r *Repo) CurrentBranch(ctx context.Context) string {
	if r.mem != nil {
		return "" // a bare clone checks nothing out
	}
	out, err := r.run(ctx, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// DefaultBranch is the branch promotions start from: the remote's HEAD
// branch when known, else the checked-out branch, else "main".
func (r *Repo) DefaultBranch(ctx context.Context) string {
	if r.mem != nil {
		defer r.mem.lock()()
		if b := r.mem.defaultBranch(); b != "" {
			return b
		}
		return "main"
	}
	if r.Remote != "" {
		if out, err := r.run(ctx, nil, "symbolic-ref", "--quiet", "--short", "refs/remotes/"+r.Remote+"/HEAD"); err == nil {
			if b, ok := strings.CutPrefix(strings.TrimSpace(out), r.Remote+"/"); ok {
				return b
			}
		}
	}
	if b := r.CurrentBranch(ctx); b != "" && !strings.HasPrefix(b, "throughline/") {
		return b
	}
	return "main"
}

// IsObjectName reports whether rev is a full object name (40 lower-case
// hex digits for SHA-1, 64 for SHA-256): a commit, whose content never
// changes, and not a name that can move (a branch, a tag, HEAD~1).
func IsObjectName(rev string) bool {
	if len(rev) != 40 && len(rev) != 64 {
		return false
	}
	for _, c := range rev {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Short is a commit id cut to 12 characters, as messages name commits.
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
