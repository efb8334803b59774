package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// The methods of an in-process clone (see Clone). Each Repo method that
// has one checks r.mem first and calls it under the clone's lock.

// maxBlob bounds a file read from the repository in process.
const maxBlob = 64 << 20

func (m *inProcess) resolve(rev string) (plumbing.Hash, error) {
	if strings.HasPrefix(rev, "-") || rev == "" || strings.ContainsAny(rev, "\n\x00") {
		return plumbing.ZeroHash, fmt.Errorf("revision %q: %w", rev, ErrNotFound)
	}
	h := plumbing.NewHash(rev)
	if _, ok := m.index.commits[h]; ok && h.String() == rev {
		return h, nil // read as a commit before (indexOf)
	}
	if h.String() != rev { // not a full commit id: a reference or an expression
		r, err := m.repo.ResolveRevision(plumbing.Revision(rev))
		if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, plumbing.ErrObjectNotFound) {
			return plumbing.ZeroHash, fmt.Errorf("revision %s: %w", rev, ErrNotFound)
		}
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("revision %s: %w", rev, err)
		}
		h = *r
	}
	// Only a missing object is "not found": a repository that cannot be
	// read is an error, never a "no" (IsAncestor, FileHistory).
	_, err := m.repo.CommitObject(h)
	switch {
	case errors.Is(err, plumbing.ErrObjectNotFound):
		return plumbing.ZeroHash, fmt.Errorf("revision %s: %w", rev, ErrNotFound)
	case errors.Is(err, plumbing.ErrInvalidType):
		return plumbing.ZeroHash, fmt.Errorf("revision %s: not a commit: %w", rev, ErrNotFound)
	case err != nil:
		return plumbing.ZeroHash, fmt.Errorf("revision %s: %w", rev, err)
	}
	return h, nil
}

func (m *inProcess) tree(rev string) (*object.Tree, error) {
	h, err := m.resolve(rev)
	if err != nil {
		return nil, err
	}
	c, err := m.repo.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", rev, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", rev, err)
	}
	return t, nil
}

func (m *inProcess) readFile(rev, p string) ([]byte, error) {
	h, err := m.resolve(rev)
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", p, rev, err)
	}
	ic, err := m.indexOf(h)
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", p, rev, err)
	}
	// A file the commit changed has its entry from the diff (the history
	// readers read those); any other is looked up in its trees.
	e, found := ic.files[p]
	if !found {
		if e, found, err = m.entryAt(ic.tree, p); err != nil {
			return nil, fmt.Errorf("reading %s at %s: %w", p, rev, err)
		}
	}
	// A directory or a submodule at p is an error, as through git (not "no
	// such file": a reader must not take a directory where its file would
	// be for a file that is absent).
	switch {
	case !found:
		return nil, fmt.Errorf("%s at %s: %w (%w)", p, rev, ErrNotFound, fs.ErrNotExist)
	case e.Mode == filemode.Dir:
		return nil, fmt.Errorf("reading %s at %s: a tree, not a file", p, rev)
	case e.Mode == filemode.Submodule:
		return nil, fmt.Errorf("reading %s at %s: a commit, not a file", p, rev)
	}
	if e.Mode == filemode.Symlink { // go-git counts a link as a file: its content would be the link's text
		return nil, fmt.Errorf("reading %s at %s: %w", p, rev, ErrSymlink)
	}
	if !e.Mode.IsFile() {
		return nil, fmt.Errorf("reading %s at %s: not a file (mode %s)", p, rev, e.Mode)
	}
	b, err := object.GetBlob(m.repo.Storer, e.Hash)
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", p, rev, err)
	}
	if b.Size > maxBlob {
		return nil, fmt.Errorf("reading %s at %s: %d bytes, over the %d-byte limit", p, rev, b.Size, maxBlob)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", p, rev, err)
	}
	defer func() { _ = rd.Close() }() // a read-only blob reader
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", p, rev, err)
	}
	return data, nil
}

// listTree lists the blobs and links under dir ("" or "." for all).
func (m *inProcess) listTree(rev, dir string) ([]string, error) {
	t, err := m.tree(rev)
	if err != nil {
		return nil, fmt.Errorf("listing %s at %s: %w", dir, rev, err)
	}
	d := strings.Trim(path.Clean(dir), "/")
	if d != "." {
		sub, err := t.Tree(d)
		if err != nil {
			return nil, nil // a directory that does not exist lists nothing
		}
		t = sub
	}
	var files []string
	walker := object.NewTreeWalker(t, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s at %s: %w", dir, rev, err)
		}
		if e.Mode == filemode.Dir || e.Mode == filemode.Submodule {
			continue
		}
		if d != "." {
			name = d + "/" + name
		}
		files = append(files, name)
	}
	sort.Strings(files) // git's order for blob paths
	return files, nil
}

func (m *inProcess) isAncestor(a, b string) (bool, error) {
	ha, err := m.resolve(a)
	if errors.Is(err, ErrNotFound) {
		return false, nil // a commit the repository does not have is not an ancestor
	}
	if err != nil {
		return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, err)
	}
	hb, err := m.resolve(b)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, err)
	}
	m.index.bound()
	ok, err := m.isAncestorIndexed(ha, hb)
	if err != nil {
		return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, err)
	}
	return ok, nil
}

// commit builds a commit on parent setting files; nothing else changes.
func (m *inProcess) commit(parent string, files map[string][]byte, message string) (string, error) {
	ph, err := m.resolve(parent)
	if err != nil {
		return "", fmt.Errorf("commit on %s: %w", parent, err)
	}
	pc, err := m.repo.CommitObject(ph)
	if err != nil {
		return "", fmt.Errorf("commit on %s: %w", parent, err)
	}
	changes := map[string][]byte{}
	for p, data := range files {
		clean := strings.TrimPrefix(path.Clean(p), "./")
		if err := checkTreePath(clean); err != nil {
			return "", fmt.Errorf("commit %s: %w", p, err)
		}
		changes[clean] = data
	}
	tree, err := m.editTree(pc.TreeHash, changes)
	if err != nil {
		return "", fmt.Errorf("commit on %s: %w", parent, err)
	}
	who := identity(time.Now())
	c := &object.Commit{Author: who, Committer: who, Message: message, TreeHash: tree, ParentHashes: []plumbing.Hash{ph}}
	h, err := m.store(c)
	if err != nil {
		return "", fmt.Errorf("commit on %s: %w", parent, err)
	}
	return h.String(), nil
}

// checkTreePath refuses a path git would not store.
func checkTreePath(p string) error {
	if p == "" || p == "." || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%q is not a repository path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || part == "" || strings.EqualFold(part, ".git") {
			return fmt.Errorf("%q is not a repository path", p)
		}
	}
	return nil
}

// identity is the author and committer: git's environment variables when
// set, else throughline.
func identity(when time.Time) object.Signature {
	s := object.Signature{Name: "throughline", Email: "throughline@localhost", When: when}
	if n := os.Getenv("GIT_COMMITTER_NAME"); n != "" {
		s.Name = n
	}
	if e := os.Getenv("GIT_COMMITTER_EMAIL"); e != "" {
		s.Email = e
	}
	return s
}

type encodable interface {
	Encode(plumbing.EncodedObject) error
}

func (m *inProcess) store(o encodable) (plumbing.Hash, error) {
	obj := m.repo.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return m.repo.Storer.SetEncodedObject(obj)
}

// editTree returns the tree base (ZeroHash: an empty one) with changes (paths
// relative to it) written as regular files.
func (m *inProcess) editTree(base plumbing.Hash, changes map[string][]byte) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if !base.IsZero() {
		t, err := m.repo.TreeObject(base)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	subs := map[string]map[string][]byte{}
	for p, data := range changes {
		head, rest, nested := strings.Cut(p, "/")
		if !nested {
			if e, ok := entries[head]; ok && e.Mode == filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is a directory, not a file", head)
			}
			h, err := m.blob(data)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries[head] = object.TreeEntry{Name: head, Mode: filemode.Regular, Hash: h}
			continue
		}
		if subs[head] == nil {
			subs[head] = map[string][]byte{}
		}
		subs[head][rest] = data
	}
	for name, sub := range subs {
		var from plumbing.Hash
		if e, ok := entries[name]; ok {
			if e.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is a file, not a directory", name)
			}
			from = e.Hash
		}
		h, err := m.editTree(from, sub)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("%s: %w", name, err)
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}
	t := &object.Tree{}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	// Git's order: a directory sorts as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
	return m.store(t)
}

func (m *inProcess) blob(data []byte) (plumbing.Hash, error) {
	obj := m.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return m.repo.Storer.SetEncodedObject(obj)
}

func (m *inProcess) fetch(ctx context.Context, refspecs ...config.RefSpec) error {
	rem, err := m.remote()
	if err != nil {
		return err
	}
	if len(refspecs) == 0 {
		refspecs = []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}
	}
	err = retryClosedInput(ctx, func() error {
		return rem.FetchContext(ctx, &gogit.FetchOptions{RefSpecs: refspecs, Auth: m.auth, CABundle: m.caBundle, Prune: true, Tags: gogit.NoTags})
	})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return fmt.Errorf("fetch %s: %w", Redact(m.url), err)
	}
	return nil
}

// closedInputAttempts is how many times a fetch is tried when go-git's
// SSH transport fails it with "closing input: EOF".
const closedInputAttempts = 3

// retryClosedInput runs fetch again, at most closedInputAttempts times in
// all, while it fails with go-git v5's "closing input: EOF": the server
// closed the SSH channel before go-git closed its side of it, after the
// request was sent (go-git #1685, fixed in v6 by #1815, not in v5). A
// fetch changes nothing on the server, so trying it again is safe; any
// other error is returned at once.
func retryClosedInput(ctx context.Context, fetch func() error) error {
	var err error
	for range closedInputAttempts {
		if err = fetch(); err == nil || !strings.Contains(err.Error(), "closing input: EOF") || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// recordHead remembers the remote's HEAD branch (DefaultBranch).
func (m *inProcess) recordHead(ctx context.Context) error {
	refs, err := m.list(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.HEAD && ref.Type() == plumbing.SymbolicReference {
			b := ref.Target().Short()
			sym := plumbing.NewSymbolicReference("refs/remotes/origin/HEAD", plumbing.NewRemoteReferenceName("origin", b))
			if err := m.repo.Storer.SetReference(sym); err != nil {
				return fmt.Errorf("record the HEAD branch of %s: %w", Redact(m.url), err)
			}
		}
	}
	return nil
}

// branches lists the remote's branches by name.
func (m *inProcess) branches(ctx context.Context) (map[string]string, error) {
	refs, err := m.list(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, ref := range refs {
		if ref.Name().IsBranch() && ref.Type() == plumbing.HashReference {
			out[ref.Name().Short()] = ref.Hash().String()
		}
	}
	return out, nil
}

// branchTip is the remote's commit of branch, fetched when it is not here.
func (m *inProcess) branchTip(ctx context.Context, branch string) (string, error) {
	bs, err := m.branches(ctx)
	if err != nil {
		return "", err
	}
	sha, ok := bs[branch]
	if !ok {
		return "", fmt.Errorf("branch %s on origin: %w", branch, ErrNotFound)
	}
	if _, err := m.repo.CommitObject(plumbing.NewHash(sha)); err != nil {
		ref := config.RefSpec("+refs/heads/" + branch + ":refs/remotes/origin/" + branch)
		if err := m.fetch(ctx, ref); err != nil {
			return "", err
		}
	}
	return sha, nil
}

// push moves branch on the remote from old ("": absent) to sha, or fails:
// ErrRejected when the branch is not (or no longer) at old, ErrUnchanged
// when it is already at sha, a *DeclinedError when the remote refused it.
func (m *inProcess) push(ctx context.Context, branch, old, sha string) error {
	rem, err := m.remote()
	if err != nil {
		return err
	}
	dst := "refs/heads/" + branch
	opts := &gogit.PushOptions{RemoteName: "origin", Auth: m.auth, CABundle: m.caBundle,
		RefSpecs: []config.RefSpec{config.RefSpec(sha + ":" + dst)}}
	if old != "" {
		if ok, err := m.isAncestor(old, sha); err != nil || !ok {
			return fmt.Errorf("push %s: %s does not descend from %s: %w", branch, sha, old, ErrRejected)
		}
		// The remote's reference must still be old: the compare of the
		// compare-and-swap (receive-pack re-checks it under its lock).
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(old + ":" + dst)}
	}
	err = rem.PushContext(ctx, opts)
	if err == nil {
		return nil
	}
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return fmt.Errorf("push %s to origin: %w", branch, ErrUnchanged)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("push %s to origin: %w", branch, ctx.Err())
	}
	if strings.Contains(err.Error(), "hook declined") {
		return &DeclinedError{Branch: branch, Remote: "origin", Reason: err.Error()}
	}
	// Why did it fail? Ask the remote: a branch that moved lost the race.
	bs, lerr := m.branches(ctx)
	if lerr != nil {
		return fmt.Errorf("push %s to origin: %w", branch, err)
	}
	switch now, exists := bs[branch]; {
	case now == sha:
		return fmt.Errorf("push %s to origin: %w", branch, ErrUnchanged)
	case exists && now != old, !exists && old != "":
		return fmt.Errorf("push %s to origin: %w (%w)", branch, ErrRejected, err)
	}
	return fmt.Errorf("push %s to origin: %w", branch, err)
}

// defaultBranch is the remote's HEAD branch as last fetched ("" unknown).
func (m *inProcess) defaultBranch() string {
	ref, err := m.repo.Storer.Reference("refs/remotes/origin/HEAD")
	if err != nil || ref.Type() != plumbing.SymbolicReference {
		return ""
	}
	b, ok := strings.CutPrefix(ref.Target().String(), "refs/remotes/origin/")
	if !ok {
		return ""
	}
	return b
}
