package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// chartUse is one remote chart an application names: in a kustomization's
// helmCharts or a Chart.yaml's dependencies. Dir is the directory of that
// file (relative to the root): its lock file pins the chart.
type chartUse struct {
	File, Field, Dir string
	Ref              chartsource.Ref
}

// chartFetcher is the chart fetcher of a command with registry flags: the
// same credentials, plain-HTTP rule and timeout; the cache beside the
// registry's (none with --no-registry-cache).
func (r *registryFlags) chartFetcher() *chartsource.Fetcher {
	o := chartsource.Options{Insecure: r.insecure, Timeout: r.requestTimeout, UserAgent: "throughline/" + buildVersion()}
	if !r.noCache {
		o.CacheDir = filepath.Join(filepath.Dir(r.cacheDir), "charts")
	}
	return chartsource.NewFetcher(o)
}

// findCharts lists the remote charts of the application at abs: the
// dependencies of abs/Chart.yaml when abs is a Helm-style app (no
// kustomization), else the helmCharts of every kustomization of its tree.
// isChart reports the Helm-style app (pin has no images to pin there).
func findCharts(ctx context.Context, root, abs string) (uses []chartUse, isChart bool, err error) {
	fsys, err := render.NewConfinedFS(root, 0, nil)
	if err != nil {
		return nil, false, &exitcode.InvalidInput{Err: err}
	}
	rel := fsys.Rel(abs)
	if !hasKustomization(abs) {
		chartFile := path.Join(rel, "Chart.yaml")
		data, err := fsys.ReadFile(chartFile)
		if err == nil {
			deps, err := chartsource.ChartDependencies(chartFile, data)
			for _, d := range deps {
				uses = append(uses, chartUse{File: chartFile, Field: d.Field, Dir: rel, Ref: d.Ref})
			}
			return uses, true, err
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
			if chartsource.IsRemote(h.Repo) {
				uses = append(uses, chartUse{File: k.File, Field: h.Field, Dir: path.Dir(k.File),
					Ref: chartsource.Ref{Repo: h.Repo, Name: h.Name, Version: h.Version}})
			}
		}
	}
	return uses, false, nil
}

func hasKustomization(dir string) bool {
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// pinCharts pins the remote charts of the application at abs into their
// lock files (with check: lists the unpinned ones and refuses them). done
// says that nothing is left for the image pin: --charts, or a Helm-style
// app. With --set it does nothing (--set writes one image).
func (o *pinOptions) pinCharts(ctx context.Context, root, abs, arg string, stdout io.Writer) (done bool, err error) {
	if len(o.set.sets) > 0 {
		return false, nil
	}
	uses, isChart, err := findCharts(ctx, root, abs)
	if err != nil || (len(uses) == 0 && !isChart && !o.chartsOnly) {
		return false, err
	}
	done = o.chartsOnly || isChart
	for _, u := range uses {
		if err := u.Ref.Validate(); err != nil {
			if chartsource.IsFloating(err) {
				return done, &exitcode.Refusal{Rule: chartsource.RuleFloatingChartVersion, File: u.File, Field: u.Field + ".version", Err: err}
			}
			return done, &exitcode.InvalidInput{File: u.File, Err: fmt.Errorf("%s: %w", u.Field, err)}
		}
	}
	fsys, err := render.NewConfinedFS(root, 0, nil)
	if err != nil {
		return done, &exitcode.InvalidInput{Err: err}
	}
	byDir, unpinned, err := unpinnedCharts(fsys, uses)
	if err != nil {
		return done, err
	}
	if o.check {
		return done, chartCheck(stdout, uses, unpinned, arg)
	}
	return done, o.writeLocks(ctx, root, byDir, stdout)
}

// unpinnedCharts groups the uses by lock directory and lists those their
// lock does not pin.
func unpinnedCharts(fsys *render.ConfinedFS, uses []chartUse) (map[string][]chartUse, []chartUse, error) {
	byDir := map[string][]chartUse{}
	var unpinned []chartUse
	for _, u := range uses {
		byDir[u.Dir] = append(byDir[u.Dir], u)
	}
	for dir, us := range byDir {
		lock, err := chartsource.ReadLock(fsys, dir)
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

func chartCheck(stdout io.Writer, uses, unpinned []chartUse, arg string) error {
	if len(unpinned) == 0 {
		_, err := fmt.Fprintf(stdout, "OK every remote chart (%d) is pinned by digest\n", len(uses))
		return err
	}
	for _, u := range unpinned {
		fmt.Fprintf(stdout, "UNPINNED chart %s (%s %s; lock %s)\n", u.Ref, u.File, u.Field, chartsource.LockPath(u.Dir))
	}
	return exitcode.Refuse(chartsource.RuleUnpinnedChart, "%d remote chart(s) not pinned by digest (listed on stdout); run throughline pin %s",
		len(unpinned), arg)
}

// writeLocks resolves every chart version (the source is asked, the package
// downloaded and verified) and writes each lock file in place, atomically.
func (o *pinOptions) writeLocks(ctx context.Context, root string, byDir map[string][]chartUse, stdout io.Writer) error {
	f := o.rf.chartFetcher()
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		var pins []chartsource.Entry
		seen := map[chartsource.Ref]bool{}
		for _, u := range byDir[dir] {
			if seen[u.Ref] {
				continue
			}
			seen[u.Ref] = true
			r, err := f.Resolve(ctx, u.Ref)
			if err != nil {
				return err
			}
			pins = append(pins, chartsource.Entry{Repo: u.Ref.Repo, Name: u.Ref.Name, Version: u.Ref.Version, Digest: r.Digest})
		}
		if err := writeLock(root, dir, pins, stdout); err != nil {
			return err
		}
	}
	return nil
}

func writeLock(root, dir string, pins []chartsource.Entry, stdout io.Writer) error {
	file := chartsource.LockPath(dir)
	abs := filepath.Join(root, filepath.FromSlash(file))
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	out, changes, err := chartsource.UpdateLock(file, data, pins)
	if err != nil || len(changes) == 0 {
		return err
	}
	if err := atomicfile.Write(abs, out, 0o644); err != nil {
		return err
	}
	for _, c := range changes {
		fmt.Fprintln(stdout, c)
	}
	return nil
}
