package chartsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// Use is one remote chart an application names: in a kustomization's
// helmCharts or a Chart.yaml's dependencies. Dir is the directory of that
// file (relative to the root): its lock file pins the chart.
type Use struct {
	File, Field, Dir string
	Ref              Ref
}

// Uses lists the remote charts of the application at abs (an absolute
// directory under root): the dependencies of abs/Chart.yaml when abs is a
// Helm-style app (no kustomization), else the helmCharts of every
// kustomization of its tree, read through the render's confined
// filesystem. isChart reports the Helm-style app. A version that floats is
// refused (rule floating-chart-version), another invalid one is exit 4,
// both naming the file and field.
func Uses(ctx context.Context, root, abs string) (uses []Use, isChart bool, err error) {
	fsys, err := render.NewConfinedFS(root, 0, nil)
	if err != nil {
		return nil, false, &exitcode.InvalidInput{Err: err}
	}
	rel := fsys.Rel(abs)
	if !hasKustomization(abs) {
		chartFile := path.Join(rel, "Chart.yaml")
		data, err := fsys.ReadFile(chartFile)
		if err == nil {
			deps, err := ChartDependencies(chartFile, data)
			if err != nil {
				return nil, true, err
			}
			for _, d := range deps {
				uses = append(uses, Use{File: chartFile, Field: d.Field, Dir: rel, Ref: d.Ref})
			}
			return uses, true, validateUses(uses)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
	}
	app, err := render.Open(ctx, render.Options{Root: root, Path: abs})
	if err != nil {
		return nil, false, err
	}
	for _, k := range app.Kustomizations {
		for _, h := range k.HelmCharts {
			if IsRemote(h.Repo) {
				uses = append(uses, Use{File: k.File, Field: h.Field, Dir: path.Dir(k.File),
					Ref: Ref{Repo: h.Repo, Name: h.Name, Version: h.Version}})
			}
		}
	}
	return uses, false, validateUses(uses)
}

func hasKustomization(dir string) bool {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// validateUses refuses the first use whose version floats (a range, a
// tag) and reports another invalid one as invalid input.
func validateUses(uses []Use) error {
	for _, u := range uses {
		if err := u.Ref.Validate(); err != nil {
			if IsFloating(err) {
				return &exitcode.Refusal{Rule: RuleFloatingChartVersion, File: u.File, Field: u.Field + ".version", Err: err}
			}
			return &exitcode.InvalidInput{File: u.File, Err: fmt.Errorf("%s: %w", u.Field, err)}
		}
	}
	return nil
}

// Unpinned groups uses by lock directory and lists, sorted by file and
// field, those their directory's lock file does not pin.
func Unpinned(fsys FileReader, uses []Use) (byDir map[string][]Use, unpinned []Use, err error) {
	byDir = map[string][]Use{}
	for _, u := range uses {
		byDir[u.Dir] = append(byDir[u.Dir], u)
	}
	for dir, us := range byDir {
		lock, err := ReadLock(fsys, dir)
		if err != nil {
			return nil, nil, err
		}
		for _, u := range us {
			if _, ok := lock.Find(u.Ref); !ok {
				unpinned = append(unpinned, u)
			}
		}
	}
	sort.Slice(unpinned, func(i, j int) bool { return unpinned[i].File+unpinned[i].Field < unpinned[j].File+unpinned[j].Field })
	return byDir, unpinned, nil
}

// LockFiles is the repository whose lock files PinLocks edits: the
// render's confined reader (render.ConfinedFS), so that a lock file is read
// as every other file of the repository is (symlinks kept inside the
// root, regular files only, the size cap).
type LockFiles interface {
	// ReadForEdit reads a file by its path relative to Root; its errors
	// name the file.
	ReadForEdit(path string) ([]byte, error)
	// Root is the absolute repository root the lock files are written
	// under.
	Root() string
}

// PinLocks resolves every chart version of byDir (the source is asked, the
// package downloaded and verified by res) and writes each directory's lock
// file under the root of repo in place, atomically, in directory order. It
// returns the changes written, one line each. Every chart is resolved and
// every lock file read and edited before any is written: a chart that
// cannot be resolved or a lock file that does not parse writes nothing.
func PinLocks(ctx context.Context, repo LockFiles, byDir map[string][]Use, res Resolver) ([]string, error) {
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var edits []lockEdit
	for _, dir := range dirs {
		var pins []Entry
		seen := map[Ref]bool{}
		for _, u := range byDir[dir] {
			if seen[u.Ref] {
				continue
			}
			seen[u.Ref] = true
			r, err := res.Resolve(ctx, u.Ref)
			if err != nil {
				return nil, err
			}
			pins = append(pins, Entry{Repo: u.Ref.Repo, Name: u.Ref.Name, Version: u.Ref.Version, Digest: r.Digest})
		}
		e, err := lockFileEdit(repo, dir, pins)
		if err != nil {
			return nil, err
		}
		if len(e.changes) > 0 {
			edits = append(edits, e)
		}
	}
	var all []string
	for _, e := range edits {
		if err := atomicfile.Write(e.abs, e.data, 0o644); err != nil {
			return all, err
		}
		all = append(all, e.changes...)
	}
	return all, nil
}

// lockEdit is one lock file's new content, not yet written.
type lockEdit struct {
	abs     string
	data    []byte
	changes []string
}

// lockFileEdit reads the lock file of dir in repo and returns it updated
// with pins (no changes: the file says so already).
func lockFileEdit(repo LockFiles, dir string, pins []Entry) (lockEdit, error) {
	file := LockPath(dir)
	data, err := repo.ReadForEdit(file)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err != nil {
		return lockEdit{}, err // it names the file
	}
	out, changes, err := UpdateLock(file, data, pins)
	if err != nil {
		return lockEdit{}, err
	}
	return lockEdit{abs: filepath.Join(repo.Root(), filepath.FromSlash(file)), data: out, changes: changes}, nil
}
