package gitrepo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
)

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
// A commit the repository does not have is not an ancestor; any other
// failure of git is an error, never a "no".
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	for _, rev := range []string{a, b} {
		if strings.HasPrefix(rev, "-") || rev == "" {
			return false, fmt.Errorf("is %q an ancestor of %q: %q is not a revision", a, b, rev)
		}
	}
	if m := r.reader(); m != nil {
		defer m.lock()()
		return m.isAncestor(a, b)
	}
	_, err := r.run(ctx, nil, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if ctx.Err() == nil && errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false, nil
	}
	// merge-base exits 128 for an object it does not know, and for a
	// broken repository: only the first is a "no".
	for _, rev := range []string{a, b} {
		has, herr := r.hasCommit(ctx, rev)
		if herr != nil {
			return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, herr)
		}
		if !has {
			return false, nil
		}
	}
	return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, err)
}

// hasCommit reports whether rev names a commit of the repository; a git
// that fails for another reason is an error.
func (r *Repo) hasCommit(ctx context.Context, rev string) (bool, error) {
	_, err := r.run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() == nil && errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil
	}
	return false, err
}

// ListTree lists the files (blobs and links, recursively) under the
// GitOps-root-relative directory dir at rev, as GitOps-root-relative paths
// in Git's order. Names are read NUL-separated, so any byte but NUL is
// safe in them. A directory that does not exist lists nothing.
func (r *Repo) ListTree(ctx context.Context, rev, dir string) ([]string, error) {
	if m := r.reader(); m != nil {
		defer m.lock()()
		d := r.full(dir)
		if path.Clean(dir) == "." {
			d = cmp.Or(strings.TrimSuffix(r.Prefix, "/"), ".")
		}
		all, err := m.listTree(rev, d)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, f := range all {
			if rel, ok := r.Rel(f); ok {
				files = append(files, rel)
			}
		}
		return files, nil
	}
	d := strings.TrimSuffix(r.full(dir), "/") + "/"
	if path.Clean(dir) == "." {
		d = r.Prefix
	}
	// git 2.39 lists nothing for "--end-of-options REV --" without a
	// pathspec: the separator goes with the path only.
	args := []string{"ls-tree", "-r", "-z", "--name-only", "--end-of-options", rev}
	if d != "" {
		args = append(args, "--", d)
	}
	out, err := r.run(ctx, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("listing %s at %s: %w", dir, rev, err)
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f == "" {
			continue
		}
		if rel, ok := r.Rel(f); ok {
			files = append(files, rel)
		}
	}
	return files, nil
}

// FileHistory lists the commits in the history of rev that changed the
// GitOps-root-relative file p, newest first.
func (r *Repo) FileHistory(ctx context.Context, rev, p string) ([]string, error) {
	if m := r.reader(); m != nil {
		defer m.lock()()
		return m.fileHistory(rev, r.full(p))
	}
	out, err := r.run(ctx, nil, "log", "--format=%H", "--end-of-options", rev, "--", r.full(p))
	if err != nil {
		return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
	}
	return strings.Fields(out), nil
}

// EachFileHistory is FileHistory one commit at a time, newest first,
// until f returns false: in process, the walk goes no further than the
// commits f asked for (a reader of the newest versions of a record does
// not walk its whole history); through git, the whole list is read first.
// f runs without the repository's lock held: it may read the repository.
func (r *Repo) EachFileHistory(ctx context.Context, rev, p string, f func(commit string) bool) error {
	m := r.reader()
	if m == nil {
		commits, err := r.FileHistory(ctx, rev, p)
		if err != nil {
			return err
		}
		for _, c := range commits {
			if !f(c) {
				return nil
			}
		}
		return nil
	}
	unlock := m.lock()
	w, err := m.walkHistory(rev, r.full(p))
	unlock()
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("history of %s at %s: %w", p, rev, err)
		}
		unlock := m.lock()
		c, ok, err := w.next(m)
		unlock()
		if err != nil || !ok {
			return err
		}
		if !f(c) {
			return nil
		}
	}
}

// MergeBase is the best common ancestor of a and b: what a pull request
// from b into a changes is the difference from it to b (three-dot
// semantics), not from a's tip, which may have moved since b was cut.
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	for _, rev := range []string{a, b} {
		if strings.HasPrefix(rev, "-") || rev == "" {
			return "", fmt.Errorf("merge base of %s and %s: %q is not a revision", a, b, rev)
		}
	}
	out, err := r.run(ctx, nil, "merge-base", a, b)
	if err != nil {
		return "", fmt.Errorf("merge base of %s and %s: %w", a, b, err)
	}
	return strings.TrimSpace(out), nil
}

// DeleteBranch removes branch if it is still at old (a compare-and-swap:
// on the remote when there is one, else locally); ErrRejected when it
// moved, nil when it is already gone. The checked-out branch is never
// deleted (ErrRejected).
func (r *Repo) DeleteBranch(ctx context.Context, branch, old string) error {
	if r.mem != nil {
		return fmt.Errorf("delete %s: not supported without git", branch)
	}
	ref := "refs/heads/" + branch
	if strings.HasPrefix(branch, "-") || branch == "" || old == "" {
		return fmt.Errorf("delete %q: not a branch and commit", branch)
	}
	if r.Remote != "" {
		if out, err := r.run(ctx, nil, "push", "--porcelain", "--force-with-lease="+ref+":"+old, r.Remote, ":"+ref); err != nil {
			var ge *Error // porcelain: the "!" line of a stale lease is on stdout
			if errors.As(err, &ge) && rejected(ge.Stderr+out) {
				return fmt.Errorf("delete %s on %s: %w", branch, r.Remote, ErrRejected)
			}
			return fmt.Errorf("delete %s on %s: %w", branch, r.Remote, err)
		}
		return nil
	}
	if cur, _ := r.run(ctx, nil, "symbolic-ref", "--quiet", "HEAD"); strings.TrimSpace(cur) == ref {
		return fmt.Errorf("delete %s: it is checked out: %w", branch, ErrRejected)
	}
	if _, err := r.run(ctx, nil, "update-ref", "-d", ref, old); err != nil {
		return fmt.Errorf("delete %s: %w (%w)", ref, ErrRejected, err)
	}
	return nil
}
