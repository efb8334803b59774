package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile/promql"
)

// Tree is one revision of the repository exported to disk, or a work tree.
// Its files are reached only through its methods, which read through the
// render's confined filesystem and write only regular files reached
// without a symlink: the tree's content is the pull request's, and a
// symlink in it must not make a gate read or write the machine's files.
type Tree struct {
	// Rev is the commit ("" for a work tree).
	Rev    string
	root   string
	tmp    string
	charts render.ChartSource
}

// Tree exports rev to a temporary directory; Close removes it.
func (r *Repo) Tree(ctx context.Context, rev string) (*Tree, error) {
	tmp, err := os.MkdirTemp("", "throughline-rev-")
	if err != nil {
		return nil, fmt.Errorf("exporting %s: %w", rev, err)
	}
	root, err := r.Export(ctx, rev, filepath.Join(tmp, "tree"))
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return &Tree{Rev: rev, root: root, tmp: tmp, charts: r.Charts}, nil
}

// WorkTree is the GitOps root dir on disk (a work tree, a test's fixture)
// as a Tree; Close leaves it in place.
func WorkTree(dir string) *Tree { return &Tree{root: dir} }

// Close removes the exported tree.
func (t *Tree) Close() error {
	if t.tmp == "" {
		return nil
	}
	return os.RemoveAll(t.tmp)
}

// path is the GitOps-root-relative slash path p in the tree.
func (t *Tree) path(p string) string { return filepath.Join(t.root, filepath.FromSlash(p)) }

// RenderOptions are the options that render the app at the
// GitOps-root-relative path p of the tree, with its chart source.
func (t *Tree) RenderOptions(p string) render.Options {
	return render.Options{Root: t.root, Path: t.path(p), Charts: t.charts}
}

// Render renders the app at the GitOps-root-relative path p without policy:
// the objects (any Acceptance left out) and their rendered hash.
func (t *Tree) Render(ctx context.Context, p string) ([]render.Object, string, error) {
	app, err := render.Open(ctx, t.RenderOptions(p))
	if err != nil {
		return nil, "", err
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return nil, "", err
	}
	var plain []render.Object
	for _, o := range objs {
		if !acceptance.IsAcceptance(o) {
			plain = append(plain, o)
		}
	}
	h, err := render.Hash(plain)
	if err != nil {
		return nil, "", exitcode.InvalidFile(p, err)
	}
	return plain, h, nil
}

// Declare renders the app at p in env with every policy rule (a
// *policy.Refusal on refusal); renderer is throughline's version.
func (t *Tree) Declare(ctx context.Context, p, env, renderer string) (*acceptance.Declaration, error) {
	return acceptance.Declare(ctx, acceptance.Request{
		Render: t.RenderOptions(p), Environment: env, Renderer: renderer, ParseQuery: promql.Parse,
	})
}

// OptionalFile reads the file p of the tree (GitOps-root-relative,
// slash-separated), nil when it does not exist. It is the one reader of
// repository files for the gates and the operations: no symlink is
// followed, even one that stays inside the tree (a protected file must not
// take its content from another file), and the read goes through the
// render's confined filesystem (nothing inside .git, only regular files,
// the render's size limit). Anything else is invalid input naming p.
func (t *Tree) OptionalFile(p string) ([]byte, error) {
	exists, err := t.noSymlink(p, "reading")
	if err != nil || !exists {
		return nil, err
	}
	cfs, err := render.NewConfinedFS(t.root, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", p, t.Rev, err)
	}
	return cfs.ReadFile(t.path(p))
}

// IsFile reports whether p is a regular file of the tree reached without
// a symlink: one that OptionalFile reads.
func (t *Tree) IsFile(p string) bool {
	exists, err := t.noSymlink(p, "reading")
	if err != nil || !exists {
		return false
	}
	fi, err := os.Lstat(t.path(p))
	return err == nil && fi.Mode().IsRegular()
}

// Subdirs lists the names of the directories in the directory p of the
// tree; symlinks are not directories here.
func (t *Tree) Subdirs(p string) ([]string, error) {
	entries, err := t.readDir(p)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, err
}

// Files lists the GitOps-root-relative paths of the files under the
// directory p of the tree, recursively (nothing when p does not exist),
// for OptionalFile to read. A symlink is listed, not followed: reading it
// is refused.
func (t *Tree) Files(p string) ([]string, error) {
	var out []string
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > 64 {
			return exitcode.InvalidFile(dir, errors.New("directories nested deeper than 64"))
		}
		entries, err := t.readDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			rel := path.Join(dir, e.Name())
			if e.IsDir() {
				if err := walk(rel, depth+1); err != nil {
					return err
				}
				continue
			}
			out = append(out, rel)
		}
		return nil
	}
	return out, walk(p, 0)
}

// readDir lists the directory p of the tree reached without a symlink
// (nothing when it does not exist).
func (t *Tree) readDir(p string) ([]fs.DirEntry, error) {
	exists, err := t.noSymlink(p, "listing")
	if err != nil || !exists {
		return nil, err
	}
	entries, err := os.ReadDir(t.path(p))
	if err != nil {
		return nil, exitcode.InvalidFile(p, fmt.Errorf("listing: %w", errors.Unwrap(err)))
	}
	return entries, nil
}

// WriteFile replaces the file p of the tree with data, atomically. Every
// directory on the way must exist and none of them, nor p, may be a
// symlink: a write never follows one (invalid input naming p).
func (t *Tree) WriteFile(p string, data []byte) error {
	exists, err := t.noSymlink(p, "writing")
	if err != nil {
		return err
	}
	at := t.path(p)
	if exists {
		if fi, err := os.Lstat(at); err != nil || !fi.Mode().IsRegular() {
			return exitcode.InvalidFile(p, errors.New("writing: not a regular file"))
		}
	} else if fi, err := os.Lstat(filepath.Dir(at)); err != nil || !fi.IsDir() {
		return exitcode.InvalidFile(p, errors.New("writing: its directory does not exist"))
	}
	if err := atomicfile.Write(at, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// noSymlink walks the GitOps-root-relative path p from the tree's root
// with Lstat: whether p exists, and invalid input naming p (for op) when p
// leaves the root, goes through .git (a work tree's credentials), a
// component of it is a symlink, or one before the last is not a directory.
func (t *Tree) noSymlink(p, op string) (bool, error) {
	clean := path.Clean(p)
	if clean == "." {
		return true, nil
	}
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return false, exitcode.InvalidFile(p, fmt.Errorf("%s: not a path inside the repository", op))
	}
	at := t.root
	parts := strings.Split(clean, "/")
	for i, part := range parts {
		if strings.EqualFold(part, ".git") {
			return false, exitcode.InvalidFile(p, fmt.Errorf("%s: the path goes through .git", op))
		}
		at = filepath.Join(at, part)
		fi, err := os.Lstat(at)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		case err != nil:
			return false, exitcode.InvalidFile(p, fmt.Errorf("%s: %s: %w", op, path.Join(parts[:i+1]...), errors.Unwrap(err)))
		case fi.Mode()&fs.ModeSymlink != 0:
			return false, exitcode.InvalidFile(p, fmt.Errorf("%s: %s is a symlink: throughline never follows one", op, path.Join(parts[:i+1]...)))
		case i < len(parts)-1 && !fi.IsDir():
			return false, exitcode.InvalidFile(p, fmt.Errorf("%s: %s is not a directory", op, path.Join(parts[:i+1]...)))
		}
	}
	return true, nil
}

// KustomizationFile is the GitOps-root-relative kustomization of the
// overlay at p, by kustomize's own list of file names.
func (t *Tree) KustomizationFile(ctx context.Context, p string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if rel := path.Join(p, n); t.IsFile(rel) {
			return rel, nil
		}
	}
	return "", exitcode.InvalidFile(p, errors.New("no kustomization: a promotion target must be a kustomize overlay with an images: entry"))
}
