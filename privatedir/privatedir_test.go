package privatedir_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/privatedir"
)

// TestEnsure: a missing directory is created 0700; a directory another
// user could have planted or can write is refused with its reason.
func TestEnsure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) // dir does not exist yet
		want  error                          // nil: accepted
	}{
		{"missing: created", func(*testing.T, string) {}, nil},
		{"private directory", func(t *testing.T, dir string) { mkdir(t, dir, 0o700) }, nil},
		{"readable by others, writable by the user only", func(t *testing.T, dir string) { mkdir(t, dir, 0o755) }, nil},
		{"symbolic link to a private directory", func(t *testing.T, dir string) {
			target := dir + ".target"
			mkdir(t, target, 0o700)
			symlink(t, target, dir)
		}, privatedir.ErrSymlink},
		{"dangling symbolic link", func(t *testing.T, dir string) { symlink(t, dir+".nowhere", dir) }, privatedir.ErrSymlink},
		{"regular file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, privatedir.ErrNotDir},
		{"group-writable", func(t *testing.T, dir string) { mkdir(t, dir, 0o770) }, privatedir.ErrWritable},
		{"world-writable", func(t *testing.T, dir string) { mkdir(t, dir, 0o777) }, privatedir.ErrWritable},
		{"world-writable and sticky, as /tmp", func(t *testing.T, dir string) {
			mkdir(t, dir, 0o777)
			if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
		}, privatedir.ErrWritable},
		{"owned by another user", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			mkdir(t, dir, 0o700)
			if err := os.Chown(dir, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, privatedir.ErrOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			tt.setup(t, dir)
			err := privatedir.Ensure(dir)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Ensure: %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			fi, err := os.Lstat(dir)
			if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077&^0o055 != 0 {
				t.Fatalf("after Ensure: %v, %v", fi.Mode(), err)
			}
		})
	}
}

func TestEnsureCreatesPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := privatedir.Ensure(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("created %v: %v", fi.Mode(), err)
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
