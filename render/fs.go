package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/throughline-dev/throughline/exitcode"
)

// ConfinedFS is a read-only kustomize filesystem rooted at a repository root.
// Every path is resolved (symlinks included) and refused when it leaves the
// root; files larger than MaxFileSize and non-regular files are refused.
// When a Trace is attached, every probe is recorded so a cache can later
// tell whether the inputs of a render changed.
type ConfinedFS struct {
	root string // absolute, symlinks resolved
	// prefix is the repository path of root when root is not the
	// repository's root (NewConfinedSubtree); "" when it is.
	prefix      string
	disk        filesys.FileSystem
	maxFileSize int64
	trace       *Trace
	totalRead   atomic.Int64
	// dirs memoizes resolved directories: a render probes thousands of
	// paths in a few directories.
	dirs sync.Map // string -> string
	// ctx is the context of the render (bind): krusty cannot see it, so
	// every read checks it.
	ctx atomic.Pointer[context.Context]
	// scanned memoizes scanYAML by content hash (to the nodes alias
	// expansion adds): a render reads its kustomization files twice (Open
	// and krusty).
	scanned sync.Map // [32]byte -> int
	// aliasNodes is what alias expansion adds to the files read so far
	// (MaxYAMLAliasNodes caps it).
	aliasNodes atomic.Int64
	// secrets are the Secret values read so far, for messages (redactErr).
	secrets secretSet
	// limitErr is the first refusal by the parsing limits: krusty's
	// message around it may lose the chain, Build returns it instead.
	limitErr atomic.Pointer[error]
	// onRead, when set (tests), is called for every read that passed the
	// context check.
	onRead func(string)
}

var _ filesys.FileSystem = (*ConfinedFS)(nil)

// NewConfinedFS returns a filesystem confined to root. maxFileSize <= 0 means
// DefaultMaxFileSize. trace may be nil.
func NewConfinedFS(root string, maxFileSize int64, trace *Trace) (*ConfinedFS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolving repository root %s: %w", root, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("resolving repository root %s: %w", root, err)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return nil, fmt.Errorf("reading repository root %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("repository root %s is not a directory", root)
	}
	if maxFileSize <= 0 {
		maxFileSize = DefaultMaxFileSize
	}
	return &ConfinedFS{root: resolved, disk: filesys.MakeFsOnDisk(), maxFileSize: maxFileSize, trace: trace}, nil
}

// NewConfinedSubtree is NewConfinedFS for a root that is the directory
// prefix of the repository, not its root: what Argo CD streams to a plugin
// with manifest-generate-paths. Files at the top of such a root are not
// the repository's root files (Prefix says so to their readers), and
// paths are reported with the prefix (SourcePath). An empty prefix is
// NewConfinedFS.
func NewConfinedSubtree(root, prefix string, maxFileSize int64, trace *Trace) (*ConfinedFS, error) {
	c, err := NewConfinedFS(root, maxFileSize, trace)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		p := path.Clean(filepath.ToSlash(prefix))
		if p == "." || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("repository prefix %q of %s: must be a relative path inside the repository", prefix, root)
		}
		c.prefix = p
	}
	return c, nil
}

// Root is the absolute, symlink-resolved repository root.
func (c *ConfinedFS) Root() string { return c.root }

// Prefix is the repository path of Root when Root is only a part of the
// repository (NewConfinedSubtree), "" when it is the repository's root.
func (c *ConfinedFS) Prefix() string { return c.prefix }

// ReadRootFile reads the repository's root file name (the policy, the
// allow-list: a bare file name): the one way a render reads them. When
// the filesystem holds only part of the repository (Prefix), the
// repository's root files are not there, and a file of that name at the
// top of the part is an app team's, not them: the answer is then
// fs.ErrNotExist, whatever is there.
func (c *ConfinedFS) ReadRootFile(name string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, fmt.Errorf("reading root file %q: not a file name", name)
	}
	if c.prefix != "" {
		return nil, fmt.Errorf("reading %s: only %s/ of the repository is here: %w", name, c.prefix, fs.ErrNotExist)
	}
	p := filepath.Join(c.root, name)
	if !c.Exists(p) {
		return nil, fmt.Errorf("reading %s: %w", name, fs.ErrNotExist)
	}
	return c.ReadFile(p)
}

// Rel returns p relative to the root for messages, or p itself when it is not
// under the root (messages of the renderer use outside and fail instead, which
// never name such a path).
func (c *ConfinedFS) Rel(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	r, err := filepath.Rel(c.root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return p
	}
	return filepath.ToSlash(r)
}

func (c *ConfinedFS) abs(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.root, p)
	}
	return filepath.Clean(p)
}

func (c *ConfinedFS) within(p string) bool {
	return p == c.root || strings.HasPrefix(p, c.root+string(filepath.Separator))
}

// resolve returns the symlink-resolved absolute form of p, refusing it when
// it (or, for a path that does not exist, its deepest existing ancestor)
// resolves outside the root.
func (c *ConfinedFS) resolve(p string) (string, error) {
	r, _, err := c.resolveStat(p)
	return r, err
}

// resolveStat is resolve that also returns the file's information when the
// last element was not a symlink (its Lstat is then its Stat), so callers
// need not stat it again; nil otherwise.
func (c *ConfinedFS) resolveStat(p string) (string, fs.FileInfo, error) {
	p = c.abs(p)
	if !c.within(p) {
		return "", nil, c.outside(p)
	}
	if c.inGit(p) {
		return "", nil, c.gitRefusal(p)
	}
	resolved, fi, err := c.evalSymlinks(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, c.fail(p, err)
		}
		if c.leavesRoot(p) {
			// A dangling symlink out of the root reads like one whose
			// target exists: outside the root, nothing is told.
			return "", nil, c.outside(p)
		}
		// Resolve the deepest ancestor that exists and re-attach the rest.
		dir, rest := p, ""
		for {
			parent := filepath.Dir(dir)
			rest = filepath.Join(filepath.Base(dir), rest)
			dir = parent
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				resolved = filepath.Join(r, rest)
				break
			}
			if parent == filepath.Dir(parent) {
				return "", nil, c.fail(p, err)
			}
		}
	}
	if !c.within(resolved) {
		return "", nil, c.outside(p)
	}
	if c.inGit(resolved) {
		return "", nil, c.gitRefusal(p)
	}
	return resolved, fi, nil
}

// inGit reports whether p, an absolute path under the root, goes through an
// element named .git below the root (a repository's metadata: a directory,
// or a worktree's or submodule's .git file).
func (c *ConfinedFS) inGit(p string) bool {
	r, err := filepath.Rel(c.root, p)
	if err != nil {
		return false
	}
	for _, e := range strings.Split(filepath.ToSlash(r), "/") {
		if isGitName(e) {
			return true
		}
	}
	return false
}

// isGitName reports whether a path element names Git's metadata (any case:
// a case-insensitive filesystem opens .GIT as .git).
func isGitName(e string) bool { return strings.EqualFold(e, ".git") }

// gitRefusal is the refusal of p, a path inside the root that is or resolves
// into .git: it names p as written, never what it holds.
func (c *ConfinedFS) gitRefusal(p string) error {
	return &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: ErrGitDir}
}

// outside is the refusal of a path that is, or resolves, outside the root.
// It names the path only when the path itself is inside the root (a symlink
// out of it), and reads the same whether the target exists or not.
func (c *ConfinedFS) outside(p string) error {
	p = c.abs(p)
	if !c.within(p) {
		return &exitcode.InvalidInput{Err: ErrOutsideRoot}
	}
	return &exitcode.InvalidInput{File: c.Rel(p), Err: ErrOutsideRoot}
}

// fail wraps an error about p for messages: paths inside the root are shown
// relative to it, and an error about a path outside the root becomes the
// outside refusal (no machine path, no "exists" or "permission denied").
func (c *ConfinedFS) fail(p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && filepath.IsAbs(pe.Path) {
		if !c.within(filepath.Clean(pe.Path)) {
			return c.outside(p)
		}
		err = &fs.PathError{Op: pe.Op, Path: c.Rel(filepath.Clean(pe.Path)), Err: pe.Err}
	}
	if !c.within(c.abs(p)) {
		return c.outside(p)
	}
	return &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: err}
}

// maxLinkHops bounds leavesRoot on symlink chains (Linux's own limit).
const maxLinkHops = 40

// leavesRoot reports whether p, which does not resolve, goes through a
// dangling symlink whose chain leaves the root: p or one of its ancestors
// inside the root is a symlink, and following it by Readlink reaches a path
// outside the root.
func (c *ConfinedFS) leavesRoot(p string) bool {
	for a := p; c.within(a) && a != c.root; a = filepath.Dir(a) {
		link, hops := a, 0
		for ; hops < maxLinkHops; hops++ {
			fi, err := os.Lstat(link)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				break
			}
			target, err := os.Readlink(link)
			if err != nil {
				break
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(link), target)
			}
			link = filepath.Clean(target)
			if !c.within(link) || !c.within(c.deepestResolved(link)) {
				return true
			}
		}
		if hops == maxLinkHops {
			return true
		}
	}
	return false
}

// deepestResolved resolves the deepest existing ancestor of p and re-attaches
// the rest.
func (c *ConfinedFS) deepestResolved(p string) string {
	rest := ""
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		if d == filepath.Dir(d) {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// evalSymlinks is filepath.EvalSymlinks with the parent directory's
// resolution memoized; only the last element is looked at afresh. When that
// element is not a symlink its Lstat information is returned too (nil
// otherwise).
func (c *ConfinedFS) evalSymlinks(p string) (string, fs.FileInfo, error) {
	dir, base := filepath.Dir(p), filepath.Base(p)
	rd, err := c.resolvedDir(dir)
	if err != nil {
		return "", nil, err
	}
	candidate := filepath.Join(rd, base)
	fi, err := os.Lstat(candidate)
	if err != nil {
		return "", nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		r, err := filepath.EvalSymlinks(candidate)
		return r, nil, err
	}
	return candidate, fi, nil
}

// resolvedDir is filepath.EvalSymlinks(dir), memoized for the life of the
// filesystem.
func (c *ConfinedFS) resolvedDir(dir string) (string, error) {
	if rd, ok := c.dirs.Load(dir); ok {
		return rd.(string), nil
	}
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	c.dirs.Store(dir, r)
	return r, nil
}

func (c *ConfinedFS) record(op, p, result string) {
	if c.trace != nil {
		c.trace.add(op, c.Rel(c.abs(p)), result)
	}
}

// bind makes ctx the context every later read checks.
func (c *ConfinedFS) bind(ctx context.Context) { c.ctx.Store(&ctx) }

// Err is the error of the context bound to the filesystem (nil when none is
// bound or it is live).
func (c *ConfinedFS) Err() error {
	if p := c.ctx.Load(); p != nil {
		return (*p).Err()
	}
	return nil
}

// ReadFile reads a regular file under the root, refusing symlinks that leave
// the root, non-regular files, files above the size cap and YAML beyond the
// parsing limits (CheckYAML). It first checks the bound context: a
// cancelled render stops at its next read even inside krusty.
func (c *ConfinedFS) ReadFile(p string) ([]byte, error) {
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", c.Rel(c.abs(p)), err)
	}
	if c.onRead != nil {
		c.onRead(p)
	}
	data, err := c.readFile(p)
	if err == nil {
		err = c.count(p, len(data))
	}
	if err != nil {
		c.record("read", p, "error")
		return nil, err
	}
	sum := sha256.Sum256(data)
	if err := c.scan(p, sum, data); err != nil {
		c.record("read", p, "error")
		return nil, err
	}
	c.record("read", p, hex.EncodeToString(sum[:]))
	return data, nil
}

// scan applies the parsing limits to data (once per content) and keeps the
// Secret values in it for messages.
func (c *ConfinedFS) scan(p string, sum [32]byte, data []byte) error {
	n, ok := c.scanned.Load(sum)
	if !ok {
		vals, added, err := scanYAML(data, true, max(0, MaxYAMLAliasNodes-int(c.aliasNodes.Load())))
		if err != nil {
			return c.refuseLimit(p, err)
		}
		c.secrets.add(vals...)
		c.scanned.Store(sum, added)
		n = added
	}
	return c.addAliasNodes(p, n.(int))
}

// addAliasNodes counts n nodes of alias expansion read from p against the
// render's MaxYAMLAliasNodes.
func (c *ConfinedFS) addAliasNodes(p string, n int) error {
	if n > 0 && c.aliasNodes.Add(int64(n)) > MaxYAMLAliasNodes {
		return c.refuseLimit(p, fmt.Errorf("%w: with this file, expanding aliases adds more than the %d nodes a render allows",
			ErrYAMLLimit, MaxYAMLAliasNodes))
	}
	return nil
}

// refuseLimit is the refusal of p by the parsing limits; the first one is
// kept for Build.
func (c *ConfinedFS) refuseLimit(p string, err error) error {
	err = &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: err}
	c.limitErr.CompareAndSwap(nil, &err)
	return err
}

// limitRefusal is the first refusal by the parsing limits, if any.
func (c *ConfinedFS) limitRefusal() error {
	if p := c.limitErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *ConfinedFS) readFile(p string) ([]byte, error) {
	r, fi, err := c.resolveStat(p)
	if err != nil {
		return nil, err
	}
	// Stat before opening: opening a named pipe would block.
	if fi == nil {
		if fi, err = os.Stat(r); err != nil {
			return nil, c.fail(p, err)
		}
	}
	if !fi.Mode().IsRegular() {
		return nil, &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	if fi.Size() > c.maxFileSize {
		return nil, &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), c.maxFileSize)}
	}
	f, err := os.OpenFile(r, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, c.fail(p, err)
	}
	defer func() { _ = f.Close() }() // opened read-only: the read reported any failure
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil, &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: errors.New("file changed while it was read")}
	}
	// Sized from the stat: one allocation; a file that grew is still cut
	// at the limit.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, c.maxFileSize+1)); err != nil {
		return nil, c.fail(p, err)
	}
	data := buf.Bytes()
	if int64(len(data)) > c.maxFileSize {
		return nil, &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: fmt.Errorf("%w: limit %d bytes", ErrTooLarge, c.maxFileSize)}
	}
	return data, nil
}

// count adds n bytes read from p to the render's total (DefaultMaxTotalRead).
func (c *ConfinedFS) count(p string, n int) error {
	if total := c.totalRead.Add(int64(n)); total > DefaultMaxTotalRead {
		return &exitcode.InvalidInput{File: c.Rel(c.abs(p)),
			Err: fmt.Errorf("%w: the render read more than %d bytes in all", ErrTooLarge, DefaultMaxTotalRead)}
	}
	return nil
}

// ReadForEdit reads p under the root with ReadFile's checks (confined to
// the root through symlinks, never into .git, a regular file under the
// size cap, within the YAML parsing limits) but is no input of a render:
// nothing is recorded in the trace or counted in the render's total. It is
// how a command that edits a file of the app (pin, accept) reads it: the
// one confined reader, after the render read the same file. Every error
// names the file (relative to the root), so callers return it as it is.
func (c *ConfinedFS) ReadForEdit(p string) ([]byte, error) {
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", c.Rel(c.abs(p)), err)
	}
	data, err := c.readFile(p)
	if err != nil {
		return nil, err
	}
	if _, _, err := scanYAML(data, false, MaxYAMLAliasNodes); err != nil {
		return nil, &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: err}
	}
	return data, nil
}

// Open opens a file for reading after the same checks as ReadFile.
func (c *ConfinedFS) Open(p string) (filesys.File, error) {
	data, err := c.ReadFile(p)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := mem.WriteFile("/f", data); err != nil {
		return nil, fmt.Errorf("buffering %s: %w", c.Rel(c.abs(p)), err)
	}
	return mem.Open("/f")
}

// Exists reports whether p exists inside the root.
func (c *ConfinedFS) Exists(p string) bool {
	ok := c.exists(p)
	c.record("exists", p, fmt.Sprint(ok))
	return ok
}

func (c *ConfinedFS) exists(p string) bool {
	r, err := c.resolve(p)
	return err == nil && c.disk.Exists(r)
}

// IsDir reports whether p is a directory inside the root.
func (c *ConfinedFS) IsDir(p string) bool {
	ok := c.isDir(p)
	c.record("isdir", p, fmt.Sprint(ok))
	return ok
}

func (c *ConfinedFS) isDir(p string) bool {
	r, err := c.resolve(p)
	return err == nil && c.disk.IsDir(r)
}

// ReadDir lists the names in directory p (after the context check, as
// ReadFile).
func (c *ConfinedFS) ReadDir(p string) ([]string, error) {
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("listing %s: %w", c.Rel(c.abs(p)), err)
	}
	names, err := c.readDir(p)
	if err != nil {
		c.record("readdir", p, "error")
		return nil, err
	}
	c.record("readdir", p, strings.Join(names, "\x00"))
	return names, nil
}

func (c *ConfinedFS) readDir(p string) ([]string, error) {
	r, err := c.resolve(p)
	if err != nil {
		return nil, err
	}
	all, err := c.disk.ReadDir(r)
	if err != nil {
		return nil, c.fail(p, err)
	}
	// .git is not listed: a walk of the directory (a chart's files) skips it.
	names := all[:0]
	for _, n := range all {
		if !isGitName(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// CleanedAbs resolves p like the on-disk filesystem and refuses results
// outside the root.
func (c *ConfinedFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	d, f, err := c.cleanedAbs(p)
	result := "error"
	if err == nil {
		result = c.Rel(string(d)) + "\x00" + f
	}
	c.record("abs", p, result)
	return d, f, err
}

func (c *ConfinedFS) cleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	abs := c.abs(p)
	if !c.within(abs) {
		return "", "", c.outside(abs)
	}
	// Like kyaml's on-disk CleanedAbs (which calls log.Fatalf on surprises),
	// with the directory resolution memoized.
	resolved, fi, err := c.evalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && c.leavesRoot(abs) {
			return "", "", c.outside(abs)
		}
		return "", "", c.fail(abs, err)
	}
	if !c.within(resolved) {
		return "", "", c.outside(abs)
	}
	if c.inGit(abs) || c.inGit(resolved) {
		return "", "", c.gitRefusal(abs)
	}
	if fi == nil {
		if fi, err = os.Stat(resolved); err != nil {
			return "", "", c.fail(abs, err)
		}
	}
	if fi.IsDir() {
		return filesys.ConfirmedDir(resolved), "", nil
	}
	return filesys.ConfirmedDir(filepath.Dir(resolved)), filepath.Base(resolved), nil
}

// Glob returns the matches of pattern that resolve inside the root.
func (c *ConfinedFS) Glob(pattern string) ([]string, error) {
	matches, err := c.disk.Glob(c.abs(pattern))
	if err != nil {
		return nil, c.fail(pattern, err)
	}
	var out []string
	for _, m := range matches {
		if _, err := c.resolve(m); err == nil {
			out = append(out, m)
		}
	}
	rels := make([]string, len(out))
	for i, m := range out {
		rels[i] = c.Rel(m)
	}
	c.record("glob", pattern, strings.Join(rels, "\x00"))
	return out, nil
}

// Walk walks the tree at p without following symlinks, skipping .git.
func (c *ConfinedFS) Walk(p string, walkFn filepath.WalkFunc) error {
	r, err := c.resolve(p)
	if err != nil {
		return err
	}
	return c.disk.Walk(r, func(path string, info fs.FileInfo, err error) error {
		if isGitName(filepath.Base(path)) && path != r {
			if info != nil && info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return walkFn(path, info, err)
	})
}

// Create is refused: the renderer never writes.
func (c *ConfinedFS) Create(p string) (filesys.File, error) { return nil, c.readOnly(p) }

// Mkdir is refused: the renderer never writes.
func (c *ConfinedFS) Mkdir(p string) error { return c.readOnly(p) }

// MkdirAll is refused: the renderer never writes.
func (c *ConfinedFS) MkdirAll(p string) error { return c.readOnly(p) }

// RemoveAll is refused: the renderer never writes.
func (c *ConfinedFS) RemoveAll(p string) error { return c.readOnly(p) }

// WriteFile is refused: the renderer never writes.
func (c *ConfinedFS) WriteFile(p string, _ []byte) error { return c.readOnly(p) }

func (c *ConfinedFS) readOnly(p string) error {
	return &exitcode.InvalidInput{File: c.Rel(c.abs(p)), Err: ErrReadOnly}
}

// Trace records every probe a render makes of the filesystem (reads, existence
// checks, directory listings, globs) with its result, so that a later render
// can be proven to see the same inputs by replaying the probes.
type Trace struct {
	mu     sync.Mutex
	seen   map[string]bool
	Probes []Probe
}

// Probe is one recorded filesystem observation. Path is relative to the
// repository root; Result is a content hash, a boolean or a listing.
type Probe struct {
	Op     string `json:"op"`
	Path   string `json:"path"`
	Result string `json:"result"`
}

func (t *Trace) add(op, path, result string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := op + "\x00" + path + "\x00" + result
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	if t.seen[key] {
		return
	}
	t.seen[key] = true
	t.Probes = append(t.Probes, Probe{Op: op, Path: path, Result: result})
}

// Compact returns the probes without those a successful read of the same
// path implies (it exists, it is not a directory): fewer system calls when
// the trace is replayed.
func (t *Trace) Compact() []Probe {
	t.mu.Lock()
	defer t.mu.Unlock()
	read := map[string]bool{}
	for _, p := range t.Probes {
		if p.Op == "read" && p.Result != "error" {
			read[p.Path] = true
		}
	}
	out := make([]Probe, 0, len(t.Probes))
	for _, p := range t.Probes {
		if read[p.Path] && ((p.Op == "exists" && p.Result == "true") || (p.Op == "isdir" && p.Result == "false")) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// replayOne reports whether probe p gives the recorded result again.
func replayOne(fsys *ConfinedFS, p Probe) bool {
	var got string
	switch p.Op {
	case "read":
		got = "error"
		if data, err := fsys.readFile(p.Path); err == nil && fsys.count(p.Path, len(data)) == nil {
			sum := sha256.Sum256(data)
			got = hex.EncodeToString(sum[:])
		}
	case "exists":
		got = fmt.Sprint(fsys.exists(p.Path))
	case "isdir":
		got = fmt.Sprint(fsys.isDir(p.Path))
	case "readdir":
		got = "error"
		if names, err := fsys.readDir(p.Path); err == nil {
			got = strings.Join(names, "\x00")
		}
	case "abs":
		got = "error"
		if d, f, err := fsys.cleanedAbs(p.Path); err == nil {
			got = fsys.Rel(string(d)) + "\x00" + f
		}
	default:
		// Globs and unknown probes are not replayed: the entry is stale.
		return false
	}
	return got == p.Result
}
