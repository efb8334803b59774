// Package helmrender renders Helm charts with Helm's own Go SDK
// (helm.sh/helm/v4: the chart loader, the values coalescing, the template
// engine) for package render, which hands it the chart's files and the
// user's values already read through its confined filesystem: this package
// reads no file and opens no connection.
//
// It is a package of its own because Helm's chart packages import client-go
// (pkg/chart/common reads client-go's scheme for the default API versions):
// the lean plugin renderer (cmd/throughline-cmp-render) must not link it, so
// render knows Helm only through the render.HelmEngine interface and the
// throughline binary registers Engine (render.UseHelm). See docs/helm.md.
package helmrender

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/strvals"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/render"
)

// Engine renders charts as `helm template` does (render.HelmEngine), with
// no cluster: lookup returns nothing, getHostByName an empty string, env
// and expandenv do not exist (Helm's engine removes them), and the
// functions that build large strings or lists (repeat, until, untilStep,
// seq) refuse sizes over MaxRepeat.
type Engine struct{}

var _ render.HelmEngine = Engine{}

// MaxRepeat caps what one call of repeat may produce (bytes) and the length
// of a list built by until, untilStep and seq: a template that asks for more
// is an output bomb, not a manifest.
const MaxRepeat = 1 << 20

// MaxUnpacked caps what a chart package (a remote chart, or a .tgz in
// charts/) may unpack to: checked by streaming it before Helm's loader
// (whose own cap, 100 MiB, it keeps in memory) reads it.
const MaxUnpacked = 32 << 20

// RenderChart loads the chart from req.Files (never from a path: Helm's
// loader.Load follows symlinks on the machine), merges the user's values
// as `helm template -f ... --set ... --set-string ...` does, validates them
// against values.schema.json (schema.go: nothing outside the chart), and renders the templates (and the CRDs of
// crds/ when req.IncludeCRDs).
func (Engine) RenderChart(ctx context.Context, req *render.ChartRender) ([]render.ChartManifest, error) {
	files := make([]*archive.BufferedFile, 0, len(req.Files))
	for _, f := range req.Files {
		files = append(files, &archive.BufferedFile{Name: f.Name, Data: f.Data})
	}
	for _, f := range req.Files {
		if strings.HasPrefix(f.Name, "charts/") && strings.HasSuffix(f.Name, ".tgz") {
			if err := checkUnpacked(f.Data); err != nil {
				return nil, &render.ChartError{File: f.Name, Err: err}
			}
		}
	}
	if len(req.Package) > 0 {
		if err := checkUnpacked(req.Package); err != nil {
			return nil, &render.ChartError{File: "chart package", Err: err}
		}
	}
	var chrt *chart.Chart
	var err error
	if len(req.Package) > 0 {
		chrt, err = loader.LoadArchive(strings.NewReader(string(req.Package)))
	} else {
		chrt, err = loader.LoadFiles(files)
	}
	if err != nil {
		return nil, &render.ChartError{File: "Chart.yaml", Err: fmt.Errorf("loading the chart: %w", err)}
	}
	if err := chrt.Validate(); err != nil {
		return nil, &render.ChartError{File: "Chart.yaml", Err: fmt.Errorf("invalid chart: %w", err)}
	}
	if err := checkDependencies(chrt); err != nil {
		return nil, &render.ChartError{File: "Chart.yaml", Err: err}
	}
	vals, err := userValues(req)
	if err != nil {
		return nil, err
	}
	if err := chartutil.ProcessDependencies(chrt, vals); err != nil {
		return nil, &render.ChartError{File: "Chart.yaml", Err: fmt.Errorf("processing dependencies: %w", err)}
	}
	caps, err := capabilities(req)
	if err != nil {
		return nil, err
	}
	ns := req.Namespace
	if ns == "" {
		ns = "default"
	}
	// Helm's own schema validation (its loaders fetch URLs and open files
	// on the machine) is off: checkSchemas and validateValues (schema.go)
	// validate with the chart's files only.
	if err := checkSchemas(chrt); err != nil {
		return nil, err
	}
	top, err := cutil.ToRenderValuesWithSchemaValidation(chrt, vals,
		common.ReleaseOptions{Name: req.ReleaseName, Namespace: ns, Revision: 1, IsInstall: true}, caps, true)
	if err != nil {
		return nil, &render.ChartError{File: "values.yaml", Err: fmt.Errorf("values: %w", err)}
	}
	v, ok := top["Values"].(common.Values)
	if !ok {
		return nil, &render.ChartError{File: "values.yaml", Err: fmt.Errorf("values: coalesced into %T, not values", top["Values"])}
	}
	if err := validateValues(chrt, v, ""); err != nil {
		return nil, err
	}
	e := engine.Engine{CustomTemplateFuncs: safeFuncs()}
	out, err := e.RenderWithContext(ctx, chrt, top)
	if err != nil {
		return nil, &render.ChartError{File: templateFile(err), Err: err}
	}
	var manifests []render.ChartManifest
	if req.IncludeCRDs {
		for _, crd := range chrt.CRDObjects() {
			manifests = append(manifests, render.ChartManifest{Name: crd.Filename, Content: string(crd.File.Data)})
		}
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") || strings.TrimSpace(out[n]) == "" {
			continue
		}
		manifests = append(manifests, render.ChartManifest{Name: n, Content: out[n]})
	}
	return manifests, nil
}

// checkDependencies is `helm template`'s check that every dependency of
// Chart.yaml is in charts/ (action.CheckDependencies).
func checkDependencies(c *chart.Chart) error {
	if c.Metadata == nil {
		return nil
	}
	have := map[string]bool{}
	for _, d := range c.Dependencies() {
		have[d.Name()] = true
	}
	var missing []string
	for _, d := range c.Metadata.Dependencies {
		if d != nil && !have[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("dependencies %s are declared in Chart.yaml but missing in charts/: vendor them, "+
			"or pin them in the chart lock so the render can fetch them", strings.Join(missing, ", "))
	}
	return nil
}

// userValues merges the value files in order (a later file wins, maps merged
// deeply) and then the --set and --set-string parameters, as Helm's
// values.Options.MergeValues does.
func userValues(req *render.ChartRender) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range req.ValueFiles {
		cur := map[string]any{}
		if err := sigyaml.Unmarshal(f.Data, &cur); err != nil {
			return nil, &render.ChartError{File: f.Name, Err: fmt.Errorf("parsing values: %w", err), Outside: true}
		}
		base = loader.MergeMaps(base, cur)
	}
	for _, s := range req.Set {
		if err := strvals.ParseInto(s, base); err != nil {
			return nil, &render.ChartError{File: req.ParametersFrom, Err: fmt.Errorf("parameter %q: %w", s, err), Outside: true}
		}
	}
	for _, s := range req.SetString {
		if err := strvals.ParseIntoString(s, base); err != nil {
			return nil, &render.ChartError{File: req.ParametersFrom, Err: fmt.Errorf("parameter %q: %w", s, err), Outside: true}
		}
	}
	return base, nil
}

// capabilities are `helm template`'s: Helm's defaults, the Kubernetes
// version and the extra API versions of the request.
func capabilities(req *render.ChartRender) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if req.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(req.KubeVersion)
		if err != nil {
			return nil, &render.ChartError{File: req.ParametersFrom, Err: fmt.Errorf("kube version %q: %w", req.KubeVersion, err), Outside: true}
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, req.APIVersions...)
	return caps, nil
}

// templateFile is the chart file a render error names ("chart/templates/x.yaml:3:4: ...").
func templateFile(err error) string {
	msg := err.Error()
	for _, f := range strings.Fields(msg) {
		f = strings.Trim(f, `"():,`)
		if i := strings.Index(f, "/templates/"); i > 0 {
			name := f[i+1:]
			if j := strings.IndexByte(name, ':'); j > 0 {
				name = name[:j]
			}
			return name
		}
	}
	return "templates"
}

// safeFuncs replace the template functions that could reach the cluster or
// the network or build unbounded output; the bounded ones call sprig's own
// after the size check.
func safeFuncs() template.FuncMap {
	sp := sprig.TxtFuncMap()
	until := sp["until"].(func(int) []int)
	untilStep := sp["untilStep"].(func(int, int, int) []int)
	seqFn := sp["seq"].(func(...int) string)
	return template.FuncMap{
		"lookup":        func(string, string, string, string) (map[string]any, error) { return map[string]any{}, nil },
		"getHostByName": func(string) string { return "" },
		"repeat": func(count int, s string) (string, error) {
			if count < 0 || (len(s) > 0 && count > MaxRepeat/len(s)) {
				return "", fmt.Errorf("repeat %d times a string of %d bytes: over the %d bytes a call may produce", count, len(s), MaxRepeat)
			}
			return strings.Repeat(s, count), nil
		},
		"until": func(n int) ([]int, error) {
			if err := checkLength(0, n, 1); err != nil {
				return nil, err
			}
			return until(n), nil
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			if err := checkLength(start, stop, step); err != nil {
				return nil, err
			}
			return untilStep(start, stop, step), nil
		},
		"seq": func(params ...int) (string, error) {
			start, step, end := 1, 1, 0
			switch len(params) {
			case 0:
				return seqFn(), nil
			case 1:
				end = params[0]
			case 2:
				start, end = params[0], params[1]
			default:
				start, step, end = params[0], params[1], params[2]
			}
			if err := checkLength(start, end, step); err != nil {
				return "", err
			}
			return seqFn(params...), nil
		},
	}
}

// checkLength refuses a list from start to stop by step longer than
// MaxRepeat.
func checkLength(start, stop, step int) error {
	if step == 0 {
		return nil
	}
	d := float64(stop) - float64(start)
	if d < 0 {
		d = -d
	}
	s := float64(step)
	if s < 0 {
		s = -s
	}
	if d/s > MaxRepeat {
		return fmt.Errorf("a list from %d to %d by %d: over the %d numbers a template may build", start, stop, step, MaxRepeat)
	}
	return nil
}

// checkUnpacked refuses a gzip stream that unpacks to more than
// MaxUnpacked bytes (a compression bomb), reading it without keeping it.
func checkUnpacked(data []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not a chart package (gzip): %w", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(zr, MaxUnpacked+1))
	if err != nil {
		return fmt.Errorf("unpacking the chart package: %w", err)
	}
	if n > MaxUnpacked {
		return fmt.Errorf("the chart package unpacks to more than %d bytes", MaxUnpacked)
	}
	return nil
}
