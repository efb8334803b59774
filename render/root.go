package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FindRoot returns the repository root for an application directory: the
// enclosing Git work tree (a directory holding .git, a directory or a file
// for worktrees), else dir itself.
func FindRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("looking for .git in %s: %w", d, err)
		}
		if d == filepath.Dir(d) {
			return abs, nil
		}
	}
}

// RootFromSourcePath returns the repository root inside the Argo CD plugin
// sidecar: the working directory (the app path of the streamed repository)
// minus the application's source path, ARGOCD_APP_SOURCE_PATH. When Argo CD
// streamed only part of the repository (manifest-generate-paths), the root
// is the top of what it streamed: nothing outside it is ever read, and
// prefix is that part's path in the repository (NewConfinedSubtree);
// prefix is "" when the whole repository was streamed.
func RootFromSourcePath(wd, sourcePath string) (root, prefix string, err error) {
	sp := filepath.Clean(filepath.FromSlash(strings.TrimSpace(sourcePath)))
	if sp == "." || sp == "" || sp == string(filepath.Separator) {
		return filepath.Clean(wd), "", nil
	}
	if filepath.IsAbs(sp) || sp == ".." || strings.HasPrefix(sp, ".."+string(filepath.Separator)) {
		return "", "", fmt.Errorf("source path %q must be relative and inside the repository", sourcePath)
	}
	wd = filepath.Clean(wd)
	// With manifest-generate-paths (--plugin-use-manifest-generate-paths),
	// Argo CD streams only the common parent of the app path and the
	// annotated paths: the working directory then ends with a tail of the
	// source path. Strip the longest tail it ends with.
	parts := strings.Split(sp, string(filepath.Separator))
	for i := range parts {
		suffix := string(filepath.Separator) + filepath.Join(parts[i:]...)
		if strings.HasSuffix(wd, suffix) {
			return strings.TrimSuffix(wd, suffix), filepath.ToSlash(filepath.Join(parts[:i]...)), nil
		}
	}
	return "", "", fmt.Errorf("working directory %s does not end with the source path %q", wd, sourcePath)
}
