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
// minus the application's source path, ARGOCD_APP_SOURCE_PATH.
func RootFromSourcePath(wd, sourcePath string) (string, error) {
	sp := filepath.Clean(filepath.FromSlash(strings.TrimSpace(sourcePath)))
	if sp == "." || sp == "" || sp == string(filepath.Separator) {
		return filepath.Clean(wd), nil
	}
	if filepath.IsAbs(sp) || sp == ".." || strings.HasPrefix(sp, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("source path %q must be relative and inside the repository", sourcePath)
	}
	wd = filepath.Clean(wd)
	suffix := string(filepath.Separator) + sp
	if !strings.HasSuffix(wd, suffix) {
		return "", fmt.Errorf("working directory %s does not end with the source path %q", wd, sourcePath)
	}
	return strings.TrimSuffix(wd, suffix), nil
}
