package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/blang/semver/v4"
	"helm.sh/helm/v4/pkg/ignore"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// RuleUnpinnedChart refuses a chart fetched from a chart repository (oci://,
// https://) whose package digest the repository does not pin (the chart lock
// file beside the kustomization or Chart.yaml: package chartsource).
const RuleUnpinnedChart = "unpinned-chart"

// RuleFloatingChartVersion refuses a remote dependency of a chart app whose
// version is a range (the policy's rule of the same name for helmCharts).
const RuleFloatingChartVersion = "floating-chart-version"

// ModeHelm renders a directory holding Chart.yaml as Argo CD's Helm source
// does.
const ModeHelm Mode = "helm"

// The limits of a chart render (doc.go, docs/helm.md), beside those of every
// file the render reads (limits.go).
const (
	// MaxChartFiles caps the files of one chart directory (dependencies
	// included).
	MaxChartFiles = 5000
	// MaxChartDepth caps the directory nesting of a chart (a symlink loop
	// inside the repository ends here).
	MaxChartDepth = 32
	// MaxChartOutput caps what one render's charts produce, in bytes.
	MaxChartOutput = 64 << 20
)

// ChartSource gives the verified package of a remote chart pinned in the
// repository. The implementation is package chartsource's.
type ChartSource interface {
	// Chart returns the chart package (.tgz bytes) of ref, pinned by the lock file in dir (the directory of
	// the kustomization or Chart.yaml, relative to the root), which it reads through files (the render's
	// confined filesystem: a cached render is reused exactly while the lock file is unchanged); a chart not
	// pinned is a *exitcode.Refusal with rule "unpinned-chart" (exit 3).
	Chart(ctx context.Context, files ChartFiles, dir string, ref ChartRef) ([]byte, error)
}

// ChartFiles reads files of the repository for a ChartSource (a
// *ConfinedFS).
type ChartFiles interface {
	ReadFile(path string) ([]byte, error)
}

// ChartRef names a chart in a chart repository.
type ChartRef struct{ Repo, Name, Version string } // Repo: "oci://host/path" or "https://host/path"

// HelmOptions are the parameters of an Argo CD Helm-style app, named as
// Argo CD's Helm source names them (spec.source.helm). A render takes them
// from the app's parameters file in Git (HelmParametersFile,
// ParseHelmParametersFile); what the plugin is given in its parameters
// (ParseHelmParameters) is only checked against the file (Options.Helm).
type HelmOptions struct {
	// ReleaseName is .Release.Name; "" means the chart directory's name
	// (the plugin passes the Argo CD application's name, as Argo CD does).
	ReleaseName string
	// Namespace is .Release.Namespace; "" means "default".
	Namespace string
	// ValueFiles are paths relative to the app directory, inside the
	// repository; applied in order, a later file wins.
	ValueFiles []string
	// Values is YAML applied after the value files.
	Values string
	// Parameters are --set (--set-string with ForceString), applied last.
	Parameters []HelmParameter
	// KubeVersion and APIVersions go to .Capabilities (Argo CD sets
	// KUBE_VERSION and KUBE_API_VERSIONS for plugins).
	KubeVersion string
	APIVersions []string
	// SkipCRDs leaves out crds/ (Argo CD's skipCrds); SkipTests the test
	// hooks (skipTests).
	SkipCRDs, SkipTests bool
	// From names where the parameters came from, for messages.
	From string
	// Given names the parameters the source set (releaseName, valueFiles,
	// ...): those a plugin's parameters must agree on with the file.
	Given []string `json:",omitempty"`
	// Destination is the namespace the Application deploys to
	// (ARGOCD_APP_NAMESPACE), "" when unknown: it must be the release's.
	Destination string `json:",omitempty"`
}

// HelmParameter is one --set parameter.
type HelmParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString,omitempty"`
}

// HelmEngine renders one chart with Helm's template engine. Package
// render/helmrender implements it with Helm's SDK; the binary that links
// it registers it with UseHelm (the lean plugin binary does not: Helm's
// chart packages import client-go, and it renders charts in a child
// process of the throughline binary, Worker.HelmPath).
type HelmEngine interface {
	RenderChart(ctx context.Context, req *ChartRender) ([]ChartManifest, error)
}

// ChartFile is a file handed to the engine: Name relative to the chart
// root for chart files, to the repository root for value files.
type ChartFile struct {
	Name string
	Data []byte
}

// ChartRender is one `helm template` of a chart the render read: its files
// (or its package), the user's values and the release.
type ChartRender struct {
	Files   []ChartFile
	Package []byte // a chart package (.tgz) instead of Files
	// ValueFiles are applied in order (-f), then Set and SetString.
	ValueFiles     []ChartFile
	Set, SetString []string
	// ParametersFrom names the file or variable Set, SetString and the
	// versions came from, for messages.
	ParametersFrom         string
	ReleaseName, Namespace string
	KubeVersion            string
	APIVersions            []string
	IncludeCRDs            bool
}

// ChartManifest is one rendered file: Name as Helm names it
// (<chart>/templates/x.yaml, <chart>/crds/y.yaml).
type ChartManifest struct {
	Name, Content string
}

// ChartError is an error of the engine about a file: File relative to the
// chart root, or as given (value files, parameters) when Outside.
type ChartError struct {
	File    string
	Outside bool
	Err     error
}

func (e *ChartError) Error() string { return e.File + ": " + e.Err.Error() }

// Unwrap is the cause.
func (e *ChartError) Unwrap() error { return e.Err }

type engineBox struct{ e HelmEngine }

// helmEngine is the process-wide choice of UseHelm.
var helmEngine atomic.Pointer[engineBox]

// UseHelm makes e the engine every later chart render of this process uses
// (nil: none; charts then render in Worker.HelmPath).
func UseHelm(e HelmEngine) {
	if e == nil {
		helmEngine.Store(nil)
		return
	}
	helmEngine.Store(&engineBox{e})
}

func linkedHelm() HelmEngine {
	if b := helmEngine.Load(); b != nil {
		return b.e
	}
	return nil
}

// ErrNoHelm is wrapped when a chart must render and neither this process
// nor a worker binary links Helm.
var ErrNoHelm = errors.New("this binary does not link Helm and has no Helm render binary")

// chartNeed is a remote chart a render needs from the ChartSource.
type chartNeed struct {
	File  string // the kustomization or Chart.yaml naming it, relative to the root
	Field string
	Dir   string // the directory of File, relative to the root
	Ref   ChartRef
}

func (n chartNeed) key() string {
	return n.Dir + "\x00" + n.Ref.Repo + "\x00" + n.Ref.Name + "\x00" + n.Ref.Version
}

// needsHelm reports whether the app renders a chart.
func (a *App) needsHelm() bool {
	if a.Mode == ModeHelm {
		return true
	}
	for _, k := range a.Kustomizations {
		if len(k.HelmCharts) > 0 {
			return true
		}
	}
	return false
}

// fetchCharts gets every remote chart the render needs from the
// ChartSource before anything renders: a chart not pinned is refused (exit
// 3) and nothing else is fetched.
func (a *App) fetchCharts(ctx context.Context) error {
	needs, err := a.remoteCharts()
	if err != nil {
		return err
	}
	for _, n := range needs {
		if _, ok := a.fetched[n.key()]; ok {
			continue
		}
		if a.charts == nil {
			return &exitcode.Refusal{Rule: RuleUnpinnedChart, File: n.File, Field: n.Field,
				Reason: fmt.Sprintf("chart %q %s from %q is not pinned by digest in the repository: pin it (throughline pin) "+
					"so the render can fetch and verify it", n.Ref.Name, n.Ref.Version, n.Ref.Repo)}
		}
		data, err := a.charts.Chart(ctx, a.FS, n.Dir, n.Ref)
		if err != nil {
			var r *exitcode.Refusal
			if errors.As(err, &r) && r.File == "" {
				r.File, r.Field = n.File, n.Field
				return err
			}
			return fmt.Errorf("%s: %s: chart %q %s from %q: %w", n.File, n.Field, n.Ref.Name, n.Ref.Version, n.Ref.Repo, err)
		}
		if int64(len(data)) > a.FS.maxFileSize {
			return &exitcode.InvalidInput{File: n.File, Err: fmt.Errorf("%s: chart package of %q: %w: %d bytes, limit %d",
				n.Field, n.Ref.Name, ErrTooLarge, len(data), a.FS.maxFileSize)}
		}
		if a.fetched == nil {
			a.fetched = map[string][]byte{}
		}
		a.fetched[n.key()] = data
	}
	return nil
}

// remoteCharts lists the remote charts the app needs: helmCharts entries
// with a repo whose chart is not in chartHome, and dependencies of an app's
// Chart.yaml that charts/ does not vendor.
func (a *App) remoteCharts() ([]chartNeed, error) {
	var out []chartNeed
	if a.Mode == ModeHelm {
		deps, err := a.missingDependencies(a.Dir)
		if err != nil {
			return nil, err
		}
		out = append(out, deps...)
	}
	for _, k := range a.Kustomizations {
		for i, h := range k.HelmCharts {
			hk := k.helm[i]
			if _, local, err := a.localChart(k, hk); err != nil {
				return nil, err
			} else if local {
				continue
			}
			out = append(out, chartNeed{File: k.File, Field: h.Field + ".repo", Dir: path.Dir(k.File),
				Ref: ChartRef{Repo: hk.Repo, Name: hk.Name, Version: hk.Version}})
		}
	}
	return out, nil
}

// chartMeta is what the render reads of a Chart.yaml.
type chartMeta struct {
	Name         string `json:"name"`
	Dependencies []struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		Repository string `json:"repository"`
	} `json:"dependencies"`
}

// missingDependencies lists the dependencies of the chart in dir that
// charts/ does not vendor and that name a chart repository; a missing one
// with no repository (or a file:// one) is left to the engine, which
// refuses it naming Chart.yaml.
func (a *App) missingDependencies(dir string) ([]chartNeed, error) {
	file := filepath.Join(dir, "Chart.yaml")
	data, err := a.FS.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var meta chartMeta
	if err := sigyaml.Unmarshal(data, &meta); err != nil {
		return nil, &exitcode.InvalidInput{File: a.FS.Rel(file), Err: fmt.Errorf("parsing Chart.yaml: %w", err)}
	}
	var vendored []string
	if a.FS.IsDir(filepath.Join(dir, "charts")) {
		if vendored, err = a.FS.ReadDir(filepath.Join(dir, "charts")); err != nil {
			return nil, err
		}
	}
	var out []chartNeed
	for i, d := range meta.Dependencies {
		if isVendored(d.Name, vendored) || d.Repository == "" || strings.HasPrefix(d.Repository, "file://") {
			continue
		}
		field := fmt.Sprintf("dependencies[%d].repository", i)
		if !chartRepoURL(d.Repository) {
			return nil, &exitcode.InvalidInput{File: a.FS.Rel(file), Err: fmt.Errorf("%s: %q: throughline fetches charts only from "+
				"oci://, https:// or http:// chart repositories (pinned by digest); vendor the chart into charts/", field, d.Repository)}
		}
		if _, err := semver.Parse(strings.TrimPrefix(d.Version, "v")); err != nil {
			return nil, &exitcode.Refusal{Rule: RuleFloatingChartVersion, File: a.FS.Rel(file), Field: fmt.Sprintf("dependencies[%d].version", i),
				Reason: fmt.Sprintf("chart %q version %q is not an exact semantic version (ranges float)", d.Name, d.Version)}
		}
		out = append(out, chartNeed{File: a.FS.Rel(file), Field: field, Dir: a.FS.Rel(dir),
			Ref: ChartRef{Repo: d.Repository, Name: d.Name, Version: d.Version}})
	}
	return out, nil
}

// isVendored reports whether charts/ holds the dependency name: a
// directory of that name or a package name-<version>.tgz.
func isVendored(name string, entries []string) bool {
	for _, e := range entries {
		if e == name || (strings.HasPrefix(e, name+"-") && strings.HasSuffix(e, ".tgz")) {
			return true
		}
	}
	return false
}

// chartRepoURL reports whether repo names a chart repository a ChartSource
// serves: oci://, https:// or http:// (any case).
func chartRepoURL(repo string) bool {
	l := strings.ToLower(repo)
	return strings.HasPrefix(l, "oci://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// chart returns the fetched package of a remote chart.
func (a *App) chart(n chartNeed) ([]byte, error) {
	if data, ok := a.fetched[n.key()]; ok {
		return data, nil
	}
	return nil, fmt.Errorf("%s: %s: chart %q was not fetched before the render", n.File, n.Field, n.Ref.Name)
}

// chartFiles reads the files of the chart in dir through the confined
// filesystem (a symlink out of the root, a file over the caps: exit 4
// naming it), leaving out what its .helmignore ignores, as Helm's
// directory loader does.
func (a *App) chartFiles(dir string) ([]ChartFile, error) {
	rules := ignore.Empty()
	if p := filepath.Join(dir, ignore.HelmIgnore); a.FS.Exists(p) {
		data, err := a.FS.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if rules, err = ignore.Parse(strings.NewReader(string(data))); err != nil {
			return nil, &exitcode.InvalidInput{File: a.FS.Rel(p), Err: err}
		}
	}
	rules.AddDefaults()
	var out []ChartFile
	var walk func(d, rel string, depth int) error
	walk = func(d, rel string, depth int) error {
		if depth > MaxChartDepth {
			return &exitcode.InvalidInput{File: a.FS.Rel(d), Err: fmt.Errorf("chart nested deeper than %d directories", MaxChartDepth)}
		}
		names, err := a.FS.ReadDir(d)
		if err != nil {
			return err
		}
		for _, n := range names {
			p, r := filepath.Join(d, n), path.Join(rel, n)
			isDir := a.FS.IsDir(p)
			if rules.Ignore(r, fileInfo{name: n, dir: isDir}) || (rel == "" && (n == ignore.HelmIgnore || n == HelmParametersFile)) {
				continue
			}
			if isDir {
				if err := walk(p, r, depth+1); err != nil {
					return err
				}
				continue
			}
			if len(out) >= MaxChartFiles {
				return &exitcode.InvalidInput{File: a.FS.Rel(dir), Err: fmt.Errorf("chart has more than %d files", MaxChartFiles)}
			}
			data, err := a.FS.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, ChartFile{Name: r, Data: data})
		}
		return nil
	}
	if err := walk(dir, "", 0); err != nil {
		return nil, err
	}
	return out, nil
}

// fileInfo is the little of os.FileInfo .helmignore rules look at.
type fileInfo struct {
	name string
	dir  bool
}

func (f fileInfo) Name() string { return f.name }
func (f fileInfo) Size() int64  { return 0 }
func (f fileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir
	}
	return 0
}
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }

// valueFile reads a value file named in field of file, relative to dir:
// a path inside the repository (never a URL: Argo CD would fetch it).
func (a *App) valueFile(file, field, dir, entry string) (ChartFile, error) {
	if KustomizeRemote(entry) || chartRepoURL(entry) {
		return ChartFile{}, &exitcode.InvalidInput{File: file,
			Err: fmt.Errorf("%s: %q: throughline reads value files only from the repository", field, entry)}
	}
	if filepath.IsAbs(entry) {
		return ChartFile{}, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("%s: %q is an absolute path; name a file of the repository, "+
			"relative to %s", field, entry, a.FS.Rel(dir))}
	}
	p := filepath.Join(dir, filepath.FromSlash(entry))
	if _, err := a.FS.resolve(p); err != nil {
		return ChartFile{}, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("%s: %q: %w", field, entry, pathRefusal(err))}
	}
	data, err := a.FS.ReadFile(p)
	if err != nil {
		return ChartFile{}, err
	}
	return ChartFile{Name: a.FS.Rel(p), Data: data}, nil
}

// renderChart runs the engine and turns its manifests into objects, each
// named by its file under chartDir (relative to the root). A hook keeps its
// helm.sh/hook annotations, as in Argo CD's render; skipTests leaves out
// test hooks, skipHooks every hook.
func (a *App) renderChart(ctx context.Context, chartDir string, req *ChartRender, skipTests, skipHooks bool) ([]Object, error) {
	e := linkedHelm()
	if e == nil {
		return nil, &exitcode.InvalidInput{File: chartDir, Err: ErrNoHelm}
	}
	manifests, err := e.RenderChart(ctx, req)
	if err != nil {
		var ce *ChartError
		if errors.As(err, &ce) {
			file := ce.File
			if !ce.Outside {
				file = path.Join(chartDir, file)
			}
			return nil, &exitcode.InvalidInput{File: file, Err: ce.Err}
		}
		return nil, &exitcode.InvalidInput{File: chartDir, Err: fmt.Errorf("rendering the chart: %w", err)}
	}
	var objs []Object
	total := 0
	for _, m := range manifests {
		total += len(m.Content)
		if total > MaxChartOutput {
			return nil, &exitcode.InvalidInput{File: chartDir, Err: fmt.Errorf("%w: the chart's templates produce more than %d bytes",
				ErrTooLarge, MaxChartOutput)}
		}
		_, rest, _ := strings.Cut(m.Name, "/")
		src := path.Join(chartDir, rest)
		data := []byte(m.Content)
		vals, n, err := scanYAML(data, true, max(0, MaxYAMLAliasNodes-int(a.FS.aliasNodes.Load())))
		if err != nil {
			return nil, &exitcode.InvalidInput{File: src, Err: fmt.Errorf("rendered: %w", err)}
		}
		// The values of Secrets the chart renders are redacted from every
		// message, as those of the Secrets the render reads.
		a.FS.secrets.add(vals...)
		if err := a.FS.addAliasNodes(src, n); err != nil {
			return nil, err
		}
		got, err := DecodeManifests(data, src)
		if err != nil {
			return nil, err
		}
		for _, o := range got {
			if hookSkipped(o, skipTests, skipHooks) {
				continue
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// hookSkipped reports whether o is a Helm hook left out: any hook with
// skipHooks, a test hook with skipTests.
func hookSkipped(o Object, skipTests, skipHooks bool) bool {
	md, _ := o.Map["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	hook, _ := ann["helm.sh/hook"].(string)
	if hook == "" {
		return false
	}
	if skipHooks {
		return true
	}
	for h := range strings.SplitSeq(hook, ",") {
		if h = strings.TrimSpace(h); skipTests && (h == "test" || h == "test-success") {
			return true
		}
	}
	return false
}

// buildChartApp renders an Argo CD Helm-style app: the chart in the app
// directory with the plugin's parameters.
func (a *App) buildChartApp(ctx context.Context) ([]Object, error) {
	chartDir := a.RelDir()
	files, err := a.chartFiles(a.Dir)
	if err != nil {
		return nil, err
	}
	deps, err := a.missingDependencies(a.Dir)
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		data, err := a.chart(d)
		if err != nil {
			return nil, err
		}
		files = append(files, ChartFile{Name: "charts/" + d.Ref.Name + "-" + d.Ref.Version + ".tgz", Data: data})
	}
	h := a.effectiveHelm()
	from := h.From
	if from == "" {
		from = "parameters"
	}
	req := &ChartRender{Files: files, ParametersFrom: from, ReleaseName: h.ReleaseName, Namespace: h.Namespace,
		KubeVersion: h.KubeVersion, APIVersions: h.APIVersions, IncludeCRDs: !h.SkipCRDs}
	for i, v := range h.ValueFiles {
		f, err := a.valueFile(from, fmt.Sprintf("valueFiles[%d]", i), a.Dir, v)
		if err != nil {
			return nil, err
		}
		req.ValueFiles = append(req.ValueFiles, f)
	}
	if strings.TrimSpace(h.Values) != "" {
		if _, _, err := scanYAML([]byte(h.Values), false, MaxYAMLAliasNodes); err != nil {
			return nil, &exitcode.InvalidInput{File: from, Err: fmt.Errorf("values: %w", err)}
		}
		req.ValueFiles = append(req.ValueFiles, ChartFile{Name: from + " values", Data: []byte(h.Values)})
	}
	for _, p := range h.Parameters {
		if p.ForceString {
			req.SetString = append(req.SetString, p.Name+"="+p.Value)
		} else {
			req.Set = append(req.Set, p.Name+"="+p.Value)
		}
	}
	return a.renderChart(ctx, chartDir, req, h.SkipTests, false)
}

// Beside is the path of the executable name in the directory of the running
// one ("" when that cannot be told): the lean plugin binary renders charts
// with the throughline binary of the same image (Worker.HelmPath).
func Beside(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(exe), name)
}

// RuleSchemaOutsideChart refuses a chart's values.schema.json (or a
// subchart's) whose $ref, $schema, $id, $dynamicRef or $recursiveRef names
// anything but a fragment of the schema, a file of the chart or a JSON
// Schema draft's metaschema: Helm would fetch it or open it on the machine.
const RuleSchemaOutsideChart = "schema-outside-chart"
