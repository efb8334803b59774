package render

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// Mode is how an application directory is rendered.
type Mode string

const (
	// ModeKustomize renders a kustomization with krusty.
	ModeKustomize Mode = "kustomize"
	// ModeDirectory reads the plain manifests of a directory.
	ModeDirectory Mode = "directory"
)

// Options says what to render.
type Options struct {
	// Root is the repository root; nothing above it is read.
	Root string
	// RootPrefix, when set, is the repository path of Root: only that
	// part of the repository is there (render.NewConfinedSubtree).
	RootPrefix string
	// Path is the application directory, absolute or relative to Root.
	Path string
	// MaxFileSize caps each file read; <= 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// Trace, when set, records every filesystem probe (for caching).
	Trace *Trace
	// Charts gives the packages of remote charts (helm.go); nil refuses
	// every remote chart (rule unpinned-chart).
	Charts ChartSource
	// Helm are the Helm parameters a plugin was given for a chart app
	// (ModeHelm; ParseHelmParameters, Given and Destination set): the render
	// takes the app's parameters from HelmParametersFile in the repository
	// and refuses any of these that disagrees with it
	// (RuleChartParametersDisagree). Without Given and Destination they are
	// not used.
	Helm HelmOptions
	// fetched are remote chart packages the parent fetched (the render
	// child's request).
	fetched map[string][]byte
}

// App is an application directory opened for rendering.
type App struct {
	FS   *ConfinedFS
	Dir  string // absolute
	Mode Mode
	// Kustomizations are the kustomization files of the tree, app first
	// (ModeKustomize only).
	Kustomizations []Kustomization
	// openAPI is set when the app's kustomization has an openapi field
	// (runKrusty resets kustomize's schema after it).
	openAPI bool
	// charts, helm and fetched are the chart source, the chart app's
	// parameters (its HelmParametersFile) and the remote chart packages
	// fetched (helm.go); given is Options.Helm, for the render child.
	charts  ChartSource
	helm    HelmOptions
	given   HelmOptions
	fetched map[string][]byte
	// helmNamespace is the namespace a kustomization's helmCharts inherit
	// from the kustomizations above it, by directory (as kustomize's).
	helmNamespace map[string]string
}

// RelDir is the application directory relative to the repository root.
func (a *App) RelDir() string { return a.FS.Rel(a.Dir) }

// SourcePath is the app's directory in the repository: RelDir under the
// filesystem's prefix, when it holds only part of the repository.
func (a *App) SourcePath() string {
	if p := a.FS.Prefix(); p != "" {
		return path.Join(p, a.RelDir())
	}
	return a.RelDir()
}

// Kustomization is one kustomization file of an app's tree with the entries
// that reach outside the repository: remote entries and Helm charts.
type Kustomization struct {
	File       string // relative to the root
	Remote     []RemoteResource
	HelmCharts []HelmChart
	// problems are local entries Build refuses before krusty runs: absolute,
	// outside the root, missing.
	problems []error
	// dir is the kustomization's directory (absolute); helm, helmGlobals
	// and namespace what its chart renders read (helmkustomize.go).
	dir         string
	helm        []types.HelmChart
	helmGlobals types.HelmGlobals
	namespace   string
}

// RemoteResource is an entry of any field that makes kustomize load
// something (resources, patches, generator files, ...: loadedEntries) and
// names a remote location instead of a path in the repository.
type RemoteResource struct {
	Field string // e.g. resources[2]
	URL   string
}

// HelmChart is an entry of helmCharts.
type HelmChart struct {
	Field   string // e.g. helmCharts[0]
	Name    string
	Repo    string
	Version string
}

// Open confines the filesystem to the root, finds how the application
// directory renders and, for a kustomization, reads its tree of
// kustomization files (without fetching anything remote).
func Open(ctx context.Context, opts Options) (*App, error) {
	fsys, err := NewConfinedSubtree(opts.Root, opts.RootPrefix, opts.MaxFileSize, opts.Trace)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: err}
	}
	dir := opts.Path
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(fsys.Root(), dir)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: opts.Path, Err: err}
	}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	if _, err := fsys.resolve(dir); err != nil {
		return nil, &exitcode.InvalidInput{File: opts.Path,
			Err: fmt.Errorf("application directory is not inside the repository root %s: %w", fsys.Root(), ErrOutsideRoot)}
	}
	if !fsys.IsDir(dir) {
		return nil, &exitcode.InvalidInput{File: fsys.Rel(dir), Err: errors.New("application path is not a directory")}
	}
	fsys.bind(ctx)
	app := &App{FS: fsys, Dir: dir, Mode: ModeDirectory, charts: opts.Charts, given: opts.Helm, fetched: opts.fetched}
	if kfile := findKustomizationFile(fsys, dir); kfile == "" && fsys.Exists(filepath.Join(dir, "Chart.yaml")) {
		app.Mode = ModeHelm
		if err := app.chartParameters(opts.Helm); err != nil {
			return nil, err
		}
	} else if kfile != "" {
		app.Mode = ModeKustomize
		seen := map[string]bool{}
		if err := app.inspect(ctx, dir, seen); err != nil {
			return nil, err
		}
	}
	return app, nil
}

func findKustomizationFile(fsys *ConfinedFS, dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, n)
		if fsys.Exists(p) && !fsys.IsDir(p) {
			return p
		}
	}
	return ""
}

// inspect reads the kustomization in dir, sorts every entry that makes
// kustomize load something (loadedEntries) into remote entries (for the
// policy and Build), local paths that are refused (for Build) and local
// directories, which it recurses into.
func (a *App) inspect(ctx context.Context, dir string, seen map[string]bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	kfile := findKustomizationFile(a.FS, dir)
	if kfile == "" {
		return nil // a plain directory resource: krusty reports it if invalid
	}
	rel := a.FS.Rel(kfile)
	data, err := a.FS.ReadFile(kfile)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := sigyaml.Unmarshal(data, &k); err != nil {
		return &exitcode.InvalidInput{File: rel, Err: fmt.Errorf("parsing kustomization: %w", err)}
	}
	for _, e := range inlineDocuments(&k) {
		_, n, err := scanYAML([]byte(e.Entry), false, max(0, MaxYAMLAliasNodes-int(a.FS.aliasNodes.Load())))
		if err != nil {
			return &exitcode.InvalidInput{File: rel, Err: fmt.Errorf("%s: %w", e.Field, err)}
		}
		if err := a.FS.addAliasNodes(kfile, n); err != nil {
			return err
		}
	}
	a.secretGeneratorValues(dir, &k)
	a.openAPI = a.openAPI || len(k.OpenAPI) > 0
	// Reserve this file's place first so the app's own kustomization leads.
	idx := len(a.Kustomizations)
	a.Kustomizations = append(a.Kustomizations, Kustomization{File: rel})
	var remote []RemoteResource
	var problems []error
	var dirs []string
	for _, e := range loadedEntries(&k) {
		if url, ok := a.remoteEntry(dir, e); ok {
			remote = append(remote, RemoteResource{Field: e.Field, URL: url})
			continue
		}
		if e.isInline() {
			continue
		}
		local, err := a.localEntry(dir, e)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", e.Field, err))
			continue
		}
		if local != "" && (e.kind == loadBase || e.kind == loadDir) && a.FS.IsDir(local) {
			dirs = append(dirs, local)
		}
	}
	a.Kustomizations[idx].Remote = remote
	a.Kustomizations[idx].problems = problems
	k.FixKustomization()
	for i, h := range k.HelmCharts {
		a.Kustomizations[idx].HelmCharts = append(a.Kustomizations[idx].HelmCharts, HelmChart{
			Field: fmt.Sprintf("helmCharts[%d]", i), Name: h.Name, Repo: h.Repo, Version: h.Version,
		})
	}
	a.keepHelm(&a.Kustomizations[idx], dir, &k, dirs)
	for _, d := range dirs {
		if err := a.inspect(ctx, d, seen); err != nil {
			return err
		}
	}
	return nil
}

// secretGeneratorValues keeps the values the secretGenerators of k put into
// Secrets (literals, env files, file sources) for messages (redactErr).
// A source that cannot be read is left to krusty to report.
func (a *App) secretGeneratorValues(dir string, k *types.Kustomization) {
	for _, g := range k.SecretGenerator {
		for _, l := range g.LiteralSources {
			_, v, _ := strings.Cut(l, "=")
			a.FS.secrets.add(v, strings.Trim(v, `"'`))
		}
		read := func(p string) string {
			if p == "" || filepath.IsAbs(p) || looksRemote(p) {
				return ""
			}
			data, err := a.FS.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil {
				return ""
			}
			return string(data)
		}
		for _, f := range g.FileSources {
			e := loadedEntry{Entry: f, fileSource: true}
			a.FS.secrets.add(read(e.location()))
		}
		for _, env := range append(append([]string(nil), g.EnvSources...), g.EnvSource) {
			for l := range strings.SplitSeq(read(env), "\n") {
				if _, v, ok := strings.Cut(l, "="); ok {
					a.FS.secrets.add(v, strings.Trim(v, `"'`))
				}
			}
		}
	}
}

// remoteEntry is the one decision of "remote" for a loaded entry: kustomize
// would fetch or clone it (KustomizeRemote, on the entry and, for a key=path
// file source, on each side of the "="), or it only looks remote (a
// host-like first element, a ref query) and no such path exists in the
// repository. It returns the remote location: the entry, or the side of a
// key=path source that is remote, for the policy to judge its pin.
func (a *App) remoteEntry(dir string, e loadedEntry) (string, bool) {
	for _, p := range e.paths() {
		if KustomizeRemote(p) {
			return p, true
		}
	}
	p := e.location()
	if p != "" && looksRemote(p) && !filepath.IsAbs(p) && !a.FS.Exists(filepath.Join(dir, filepath.FromSlash(p))) {
		return p, true
	}
	return "", false
}

// localEntry checks a local entry: a relative path that resolves inside the
// repository root and exists there. It returns the absolute path ("" for a
// malformed file source kustomize refuses without loading anything). The
// error never names a path outside the root, nor tells whether one exists.
func (a *App) localEntry(dir string, e loadedEntry) (string, error) {
	p := e.location()
	if p == "" {
		return "", nil
	}
	if filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is an absolute path; throughline loads only paths inside the repository, relative to the kustomization", e.Entry)
	}
	local := filepath.Join(dir, filepath.FromSlash(p))
	if _, err := a.FS.resolve(local); err != nil {
		return "", fmt.Errorf("%q: %w", e.Entry, pathRefusal(err))
	}
	if !a.FS.Exists(local) {
		return "", fmt.Errorf("%q does not exist in the repository (%s)", e.Entry, a.FS.Rel(local))
	}
	return local, nil
}

// Remote lists every remote entry of the app's kustomization tree.
func (a *App) Remote() []RemoteResource {
	var out []RemoteResource
	for _, k := range a.Kustomizations {
		out = append(out, k.Remote...)
	}
	return out
}

// krustyMu serializes krusty runs: kustomize keeps process-wide state in its
// plugin and openapi registries.
var krustyMu sync.Mutex

// runKrusty runs kustomize under krustyMu; the lock is released also when
// kustomize panics (the caller recovers), or every later render of the
// process would wait for it forever. A kustomization with an openapi field
// sets kustomize's process-wide schema, and kustomize's own reset keeps a
// custom schema: every later render of the process would merge patches
// with it (a strategic merge of containers by name then replaces the list,
// and the hash changes). So the schema is reset after such a render.
func runKrusty(opts *krusty.Options, fsys filesys.FileSystem, dir string, customSchema bool) (resmap.ResMap, error) {
	krustyMu.Lock()
	defer krustyMu.Unlock()
	if customSchema {
		defer openapi.ResetOpenAPI()
	}
	return krusty.MakeKustomizer(opts).Run(fsys, dir)
}

// Build renders the application into objects. It never fetches: a tree with
// remote resources is refused with an *exitcode.InvalidInput (policy reports unpinned
// ones before this is called). Every file read checks ctx, so a cancelled
// render stops at its next read, also inside krusty. No error names a
// value of a Secret the render read (redactErr).
func (a *App) Build(ctx context.Context) ([]Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.FS.bind(ctx)
	var objs []Object
	var err error
	switch a.Mode {
	case ModeKustomize:
		if err = a.refuseBeforeKrusty(); err != nil {
			break
		}
		if err = a.fetchCharts(ctx); err != nil {
			break
		}
		var w *Worker
		if w, err = a.renderWorker(); err != nil {
			break
		}
		if w != nil {
			objs, err = a.buildInWorker(ctx, w)
		} else {
			objs, err = a.buildKustomization(ctx)
		}
	case ModeHelm:
		if err = a.fetchCharts(ctx); err != nil {
			break
		}
		var w *Worker
		if w, err = a.renderWorker(); err != nil {
			break
		}
		if w != nil {
			objs, err = a.buildInWorker(ctx, w)
		} else {
			objs, err = a.buildChartApp(ctx)
		}
	default:
		objs, err = a.readDirectory(ctx)
	}
	if err != nil {
		return nil, a.FS.secrets.redactErr(err)
	}
	// The Secrets the render produced (a child's render, a chart's) are
	// redacted from what is said about the objects later (Redactor).
	a.FS.secrets.add(objectSecretValues(objs)...)
	return objs, nil
}

// refuseBeforeKrusty refuses, before krusty sees the tree, every entry that
// would make it fetch, clone or read outside the repository, and helmCharts
// entries throughline cannot render (checkHelmCharts); kustomize's own Helm
// stays off: throughline renders the charts (helmkustomize.go).
func (a *App) refuseBeforeKrusty() error {
	for _, k := range a.Kustomizations {
		for _, r := range k.Remote {
			return &exitcode.InvalidInput{File: k.File, Err: fmt.Errorf("%s: remote resource %q: throughline renders only what is in the repository; "+
				"vendor the base into the repository", r.Field, r.URL)}
		}
	}
	for _, k := range a.Kustomizations {
		for _, p := range k.problems {
			return &exitcode.InvalidInput{File: k.File, Err: p}
		}
	}
	return a.checkHelmCharts()
}

func (a *App) buildKustomization(ctx context.Context) (objs []Object, err error) {
	kfile := a.FS.Rel(findKustomizationFile(a.FS, a.Dir))
	defer func() {
		if r := recover(); r != nil {
			objs, err = nil, &exitcode.InvalidInput{File: kfile, Err: fmt.Errorf("kustomize panicked: %v", r)}
		}
	}()
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	fsys, err := a.helmOverlay(ctx)
	if err != nil {
		return nil, err
	}
	resMap, err := runKrusty(opts, fsys, a.Dir, a.openAPI)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("rendering %s: %w", kfile, cerr)
		}
		if lerr := a.FS.limitRefusal(); lerr != nil {
			return nil, lerr
		}
		return nil, &exitcode.InvalidInput{File: kfile, Err: &rootRelativeError{err: err, root: a.FS.Root()}}
	}
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, &exitcode.InvalidInput{File: kfile, Err: fmt.Errorf("reading rendered %s: %w", r.CurId(), mapError(r.YNode(), err))}
		}
		o := Object{Map: m, Source: kfile}
		if err := validateIdentity(o); err != nil {
			return nil, &exitcode.InvalidInput{File: kfile, Err: fmt.Errorf("rendered object: %w", err)}
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// manifestExtensions are the files a plain directory app renders.
var manifestExtensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ChecksFile is the app's runtime checks (package checkfile reads it): a
// declaration beside the manifests, never rendered as one.
const ChecksFile = "throughline-checks.yaml"

func (a *App) readDirectory(ctx context.Context) ([]Object, error) {
	names, err := a.FS.ReadDir(a.Dir)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var objs []Object
	files := 0
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := filepath.Join(a.Dir, n)
		if strings.HasPrefix(n, ".") || n == ChecksFile || n == HelmParametersFile || !manifestExtensions[strings.ToLower(filepath.Ext(n))] ||
			a.FS.IsDir(p) {
			continue
		}
		data, err := a.FS.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files++
		o, err := DecodeManifests(data, a.FS.Rel(p))
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	if len(objs) == 0 {
		what := "no *.yaml, *.yml or *.json files"
		if files > 0 {
			what = fmt.Sprintf("%d manifest files but no objects", files)
		}
		return nil, &exitcode.InvalidInput{File: a.RelDir(), Err: fmt.Errorf("no manifests to render: %s and no kustomization", what)}
	}
	return objs, nil
}

// rootRelativeError shows krusty's messages with paths relative to the
// repository root (Argo CD streams the repository into a random directory).
type rootRelativeError struct {
	err  error
	root string
}

func (e *rootRelativeError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.root+string(filepath.Separator), "")
}

func (e *rootRelativeError) Unwrap() error { return e.err }
