package render

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// defaultReleaseName is the release name of a helmCharts entry without
// one: `helm template`'s own default. kustomize passes --generate-name,
// which names the release after the clock: a render must be a function of
// the repository, so throughline does not.
const defaultReleaseName = "release-name"

// keepHelm records what the chart renders of the kustomization k in dir
// read: its helmCharts (after FixKustomization folded the deprecated
// helmChartInflationGenerator in), helmGlobals, namespace, and the
// namespace the kustomizations it includes (dirs) inherit for their charts.
func (a *App) keepHelm(into *Kustomization, dir string, k *types.Kustomization, dirs []string) {
	into.dir = dir
	into.helm = k.HelmCharts
	if k.HelmGlobals != nil {
		into.helmGlobals = *k.HelmGlobals
	}
	into.namespace = k.Namespace
	ns := k.Namespace
	if ns == "" {
		ns = a.helmNamespace[dir]
	}
	if ns == "" {
		return
	}
	if a.helmNamespace == nil {
		a.helmNamespace = map[string]string{}
	}
	for _, d := range dirs {
		if _, set := a.helmNamespace[d]; !set {
			a.helmNamespace[d] = ns
		}
	}
}

// checkHelmCharts refuses, before anything is fetched or rendered, the
// helmCharts entries throughline cannot render as kustomize would: no name,
// a name or release that is not a plain name, a repo that is not a chart
// repository, an absolute chartHome, a nameTemplate (a release name from a
// template), an unknown valuesMerge.
func (a *App) checkHelmCharts() error {
	for _, k := range a.Kustomizations {
		if g := k.helmGlobals.ChartHome; g != "" && (filepath.IsAbs(g) || KustomizeRemote(g)) {
			return &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("helmGlobals.chartHome: %q: name a directory of the repository, "+
				"relative to the kustomization", g)}
		}
		for i, h := range k.helm {
			field := k.HelmCharts[i].Field
			var err error
			switch {
			case !chartName.MatchString(h.Name):
				err = fmt.Errorf("%s.name: %q is not a chart name", field, h.Name)
			case h.ReleaseName != "" && !chartName.MatchString(h.ReleaseName):
				err = fmt.Errorf("%s.releaseName: %q is not a release name", field, h.ReleaseName)
			case h.Repo != "" && !chartRepoURL(h.Repo):
				err = fmt.Errorf("%s.repo: %q: throughline fetches charts only from oci://, https:// or http:// chart repositories "+
					"(pinned by digest); vendor the chart into the chart home", field, h.Repo)
			case h.NameTemplate != "":
				err = fmt.Errorf("%s.nameTemplate: not supported (the release name would come from a template); set releaseName", field)
			case h.ValuesMerge != "" && h.ValuesMerge != "override" && h.ValuesMerge != "merge" && h.ValuesMerge != "replace":
				err = fmt.Errorf("%s.valuesMerge: %q must be one of override, merge, replace", field, h.ValuesMerge)
			}
			if err != nil {
				return &exitcode.InvalidInput{File: k.File, Err: err}
			}
		}
	}
	return nil
}

// chartName is what a chart or release name may be: no path, no flag.
var chartName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// localChart is where kustomize looks for the chart of h in the chart home
// of k (chartHome/name, or chartHome/name-version/name when the entry
// names a repo and a version: where `helm pull` put it), and whether it is
// there: a chart found there renders as found, as in kustomize.
func (a *App) localChart(k Kustomization, h types.HelmChart) (string, bool, error) {
	home := k.helmGlobals.ChartHome
	if home == "" {
		home = types.HelmDefaultHome
	}
	dir := filepath.Join(k.dir, filepath.FromSlash(home))
	if h.Repo != "" && h.Version != "" {
		dir = filepath.Join(dir, h.Name+"-"+h.Version)
	}
	dir = filepath.Join(dir, h.Name)
	if _, err := a.FS.resolve(dir); err != nil {
		return "", false, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("helmGlobals.chartHome: %q: %w", home, pathRefusal(err))}
	}
	if a.FS.IsDir(dir) {
		return dir, true, nil
	}
	if h.Repo == "" {
		return "", false, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("helmCharts: chart %q: no repo, and no chart at %s",
			h.Name, a.FS.Rel(dir))}
	}
	return dir, false, nil
}

// helmOverlay is the filesystem krusty reads for an app with helmCharts:
// the confined filesystem, with each kustomization that has charts
// replaced by itself without helmCharts, helmGlobals and
// helmChartInflationGenerator and with one more resource per chart, a file
// beside it holding the chart's rendered objects. Overlays and
// transformers then patch the chart's output as they would kustomize's.
func (a *App) helmOverlay(ctx context.Context) (filesys.FileSystem, error) {
	if !a.needsHelm() {
		return a.FS, nil
	}
	over := &helmFS{ConfinedFS: a.FS, files: map[string][]byte{}}
	for _, k := range a.Kustomizations {
		if len(k.helm) == 0 {
			continue
		}
		kfile := filepath.Join(a.FS.Root(), filepath.FromSlash(k.File))
		orig, err := a.FS.ReadFile(kfile)
		if err != nil {
			return nil, err
		}
		var doc map[string]any
		if err := sigyaml.Unmarshal(orig, &doc); err != nil {
			return nil, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("parsing kustomization: %w", err)}
		}
		delete(doc, "helmCharts")
		delete(doc, "helmGlobals")
		delete(doc, "helmChartInflationGenerator")
		resources, _ := doc["resources"].([]any)
		for i, h := range k.helm {
			objs, err := a.renderHelmChart(ctx, k, i, h)
			if err != nil {
				return nil, err
			}
			var out strings.Builder
			if err := EncodeYAML(&out, objs); err != nil {
				return nil, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("%s: encoding the chart's objects: %w", k.HelmCharts[i].Field, err)}
			}
			name := fmt.Sprintf(".throughline-helm-%d-%s.yaml", i, h.Name)
			over.files[over.key(filepath.Join(k.dir, name))] = []byte(out.String())
			resources = append(resources, name)
		}
		doc["resources"] = resources
		data, err := sigyaml.Marshal(doc)
		if err != nil {
			return nil, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("rewriting the kustomization without helmCharts: %w", err)}
		}
		over.files[over.key(kfile)] = data
	}
	return over, nil
}

// renderHelmChart renders the i-th helmCharts entry h of k as kustomize's
// HelmChartInflationGenerator would run `helm template`: the values file
// (valuesFile, else the chart's values.yaml) merged with valuesInline as
// valuesMerge says (override: inline wins; merge: the file wins; replace:
// inline alone), then additionalValuesFiles; the release namespace from
// the entry, else the kustomization, else the kustomization above it.
func (a *App) renderHelmChart(ctx context.Context, k Kustomization, i int, h types.HelmChart) ([]Object, error) {
	field := k.HelmCharts[i].Field
	dir, local, err := a.localChart(k, h)
	if err != nil {
		return nil, err
	}
	req := &ChartRender{ParametersFrom: k.File, ReleaseName: h.ReleaseName, Namespace: h.Namespace,
		KubeVersion: h.KubeVersion, APIVersions: h.ApiVersions, IncludeCRDs: h.IncludeCRDs}
	chartDir := a.FS.Rel(dir)
	if local {
		if req.Files, err = a.chartFiles(dir); err != nil {
			return nil, err
		}
	} else {
		n := chartNeed{File: k.File, Field: field + ".repo", Dir: path.Dir(k.File), Ref: ChartRef{Repo: h.Repo, Name: h.Name, Version: h.Version}}
		if req.Package, err = a.chart(n); err != nil {
			return nil, err
		}
		chartDir = k.File + " " + field
	}
	if req.ReleaseName == "" {
		req.ReleaseName = defaultReleaseName
	}
	if req.Namespace == "" {
		req.Namespace = k.namespace
	}
	if req.Namespace == "" {
		req.Namespace = a.helmNamespace[k.dir]
	}
	values, err := a.helmValues(k, field, dir, local, h)
	if err != nil {
		return nil, err
	}
	req.ValueFiles = append(req.ValueFiles, values...)
	for j, f := range h.AdditionalValuesFiles {
		vf, err := a.valueFile(k.File, fmt.Sprintf("%s.additionalValuesFiles[%d]", field, j), k.dir, f)
		if err != nil {
			return nil, err
		}
		req.ValueFiles = append(req.ValueFiles, vf)
	}
	return a.renderChart(ctx, chartDir, req, h.SkipTests, h.SkipHooks)
}

// helmValues is the first values file of a helmCharts entry, as kustomize
// builds it.
func (a *App) helmValues(k Kustomization, field, chartDir string, local bool, h types.HelmChart) ([]ChartFile, error) {
	var base ChartFile
	switch {
	case h.ValuesFile != "":
		f, err := a.valueFile(k.File, field+".valuesFile", k.dir, h.ValuesFile)
		if err != nil {
			return nil, err
		}
		base = f
	case local && a.FS.Exists(filepath.Join(chartDir, "values.yaml")):
		data, err := a.FS.ReadFile(filepath.Join(chartDir, "values.yaml"))
		if err != nil {
			return nil, err
		}
		base = ChartFile{Name: a.FS.Rel(filepath.Join(chartDir, "values.yaml")), Data: data}
	}
	if len(h.ValuesInline) == 0 {
		if base.Name == "" {
			return nil, nil
		}
		return []ChartFile{base}, nil
	}
	inline, err := kyaml.FromMap(h.ValuesInline)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("%s.valuesInline: %w", field, err)}
	}
	merged := inline
	if h.ValuesMerge != "replace" && len(strings.TrimSpace(string(base.Data))) > 0 {
		file, err := kyaml.Parse(string(base.Data))
		if err != nil {
			return nil, &exitcode.InvalidInput{File: base.Name, Err: fmt.Errorf("parsing values: %w", err)}
		}
		if h.ValuesMerge == "merge" {
			merged, err = merge2.Merge(file, inline.Copy(), kyaml.MergeOptions{})
		} else {
			merged, err = merge2.Merge(inline, file.Copy(), kyaml.MergeOptions{})
		}
		if err != nil {
			return nil, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("%s.valuesInline: merging with %s: %w", field, base.Name, err)}
		}
	}
	out, err := merged.String()
	if err != nil {
		return nil, &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("%s.valuesInline: %w", field, err)}
	}
	return []ChartFile{{Name: k.File + " " + field + ".valuesInline", Data: []byte(out)}}, nil
}

// helmFS is the confined filesystem with some files replaced or added in
// memory (helmOverlay): keys are absolute, symlink-resolved paths.
type helmFS struct {
	*ConfinedFS
	files map[string][]byte
}

// key is p's absolute, symlink-resolved form (as krusty's CleanedAbs gives
// it); p itself when it cannot be resolved.
func (h *helmFS) key(p string) string {
	if r, err := h.resolve(p); err == nil {
		return r
	}
	return h.abs(p)
}

func (h *helmFS) mem(p string) ([]byte, bool) {
	d, ok := h.files[h.key(p)]
	return d, ok
}

// ReadFile reads the in-memory file, else the confined one.
func (h *helmFS) ReadFile(p string) ([]byte, error) {
	if d, ok := h.mem(p); ok {
		return d, nil
	}
	return h.ConfinedFS.ReadFile(p)
}

// Open opens the in-memory file, else the confined one.
func (h *helmFS) Open(p string) (filesys.File, error) {
	d, ok := h.mem(p)
	if !ok {
		return h.ConfinedFS.Open(p)
	}
	m := filesys.MakeFsInMemory()
	if err := m.WriteFile("/f", d); err != nil {
		return nil, fmt.Errorf("buffering %s: %w", h.Rel(h.abs(p)), err)
	}
	return m.Open("/f")
}

// Exists is true for the in-memory files.
func (h *helmFS) Exists(p string) bool {
	if _, ok := h.mem(p); ok {
		return true
	}
	return h.ConfinedFS.Exists(p)
}

// IsDir is false for the in-memory files.
func (h *helmFS) IsDir(p string) bool {
	if _, ok := h.mem(p); ok {
		return false
	}
	return h.ConfinedFS.IsDir(p)
}

// CleanedAbs resolves an in-memory file to its directory and name.
func (h *helmFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if _, ok := h.mem(p); ok {
		k := h.key(p)
		return filesys.ConfirmedDir(filepath.Dir(k)), filepath.Base(k), nil
	}
	return h.ConfinedFS.CleanedAbs(p)
}
