package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"sigs.k8s.io/kustomize/api/types"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/render"
)

// RuleChartValuesSchema is the rule of a chart whose values.schema.json
// rejects the values the target gives it.
const RuleChartValuesSchema = "chart-values-schema"

// errStopCheck ends Check's steps early: what follows would only fail on
// what a step already refused (a chart whose schema rejects the values does
// not render).
var errStopCheck = errors.New("the gate's later steps cannot run")

// valuesLayer is one source of a chart's values: a file (or the
// kustomization's valuesInline) and the field prefix its keys sit under.
type valuesLayer struct {
	file, prefix string
	values       map[string]any
}

// valuesSchema refuses a promotion whose target gives a chart values its
// values.schema.json rejects (a step of Check, before the render): one
// finding per violated field, naming the file that sets it. Helm's own
// validation would end the render with exit 4; this names rule, file and
// field. Only kustomize helmCharts are judged here (a chart app's values
// come from the Application's parameters, outside the change): the render
// still refuses the rest.
func (c *promotionCheck) valuesSchema(ctx context.Context) error {
	opts := c.ht.RenderOptions(c.rec.Target.Path)
	opts.Charts = nil // the values' schemas of the charts in the tree; remote ones are the render's
	app, err := render.Open(ctx, opts)
	if err != nil {
		return nil //nolint:nilerr // the render step reports it
	}
	refused := false
	for _, k := range app.Kustomizations {
		if len(k.HelmCharts) == 0 {
			continue
		}
		for _, f := range chartSchemaFindings(ctx, c.r, app.FS, k.File) {
			c.rep.refuse(f, "%s", f.Reason)
			refused = true
		}
	}
	if refused {
		return errStopCheck
	}
	return nil
}

// chartSchemaFindings validates the values of each helmCharts entry of the
// kustomization kfile against its chart's values schema.
func chartSchemaFindings(ctx context.Context, r *gitops.Repo, fsys *render.ConfinedFS, kfile string) []Finding {
	data, err := fsys.ReadFile(kfile)
	if err != nil {
		return nil
	}
	var k types.Kustomization
	if sigyaml.Unmarshal(data, &k) != nil {
		return nil
	}
	kdir := path.Dir(kfile)
	home := types.HelmDefaultHome
	if k.HelmGlobals != nil && k.HelmGlobals.ChartHome != "" {
		home = k.HelmGlobals.ChartHome
	}
	var out []Finding
	for i, h := range k.HelmCharts {
		field := fmt.Sprintf("helmCharts[%d]", i)
		schema, defaults, ok := chartSchema(ctx, r, fsys, kdir, home, h)
		if !ok || schema == nil {
			continue
		}
		layers := []valuesLayer{{file: defaults.file, values: defaults.values}}
		if h.ValuesFile != "" {
			layers = append(layers, readLayer(fsys, path.Join(kdir, h.ValuesFile)))
		}
		if len(h.ValuesInline) > 0 {
			inline := valuesLayer{file: kfile, prefix: field + ".valuesInline", values: h.ValuesInline}
			if h.ValuesMerge == "replace" {
				layers = layers[:1]
			}
			if h.ValuesMerge == "merge" { // the values file wins over the inline values
				layers = append(layers[:1], append([]valuesLayer{inline}, layers[1:]...)...)
			} else {
				layers = append(layers, inline)
			}
		}
		for _, f := range h.AdditionalValuesFiles {
			layers = append(layers, readLayer(fsys, path.Join(kdir, f)))
		}
		for _, v := range violations(schema, layers) {
			out = append(out, Finding{Rule: RuleChartValuesSchema, File: v.file, Object: h.Name, Field: v.field,
				Reason: fmt.Sprintf("chart %s %s: its values.schema.json rejects %s in %s: %s", h.Name, h.Version, v.field, v.file, v.msg)})
		}
	}
	return out
}

// chartSchema reads the values.schema.json and values.yaml of the chart
// of h: from the chart home, else its pinned package from the chart
// source. ok is false when the chart cannot be read (the render reports
// why).
func chartSchema(ctx context.Context, r *gitops.Repo, fsys *render.ConfinedFS, kdir, home string, h types.HelmChart) (
	schema []byte, defaults valuesLayer, ok bool) {
	dir := path.Join(kdir, home)
	if h.Repo != "" && h.Version != "" {
		dir = path.Join(dir, h.Name+"-"+h.Version)
	}
	dir = path.Join(dir, h.Name)
	if fsys.IsDir(dir) {
		schema, _ = fsys.ReadFile(path.Join(dir, render.ValuesSchemaFile))
		return schema, readLayer(fsys, path.Join(dir, "values.yaml")), true
	}
	if h.Repo == "" || r.Charts == nil {
		return nil, defaults, false
	}
	pkg, err := r.Charts.Chart(ctx, fsys, kdir, render.ChartRef{Repo: h.Repo, Name: h.Name, Version: h.Version})
	if err != nil {
		return nil, defaults, false
	}
	if schema, err = render.PackageFile(pkg, render.ValuesSchemaFile, 8<<20); err != nil {
		return nil, defaults, false
	}
	vals, err := render.PackageFile(pkg, "values.yaml", 8<<20)
	if err != nil {
		return nil, defaults, false
	}
	defaults = valuesLayer{file: fmt.Sprintf("%s/%s:%s values.yaml", strings.TrimSuffix(h.Repo, "/"), h.Name, h.Version)}
	_ = sigyaml.Unmarshal(vals, &defaults.values)
	return schema, defaults, true
}

// readLayer reads a values file (an empty layer when it cannot be read or
// parsed: the render refuses it).
func readLayer(fsys *render.ConfinedFS, file string) valuesLayer {
	l := valuesLayer{file: file}
	if data, err := fsys.ReadFile(file); err == nil {
		_ = sigyaml.Unmarshal(data, &l.values)
	}
	return l
}

// coalesce merges src over dst as Helm coalesces values: maps merge, any
// other value of src wins, a null in src removes the key.
func coalesce(dst, src map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		if v == nil {
			delete(out, k)
			continue
		}
		dm, dok := out[k].(map[string]any)
		sm, sok := v.(map[string]any)
		if dok && sok {
			out[k] = coalesce(dm, sm)
			continue
		}
		out[k] = v
	}
	return out
}

// violation is one field a values schema rejects.
type violation struct{ file, field, msg string }

// violations validates the coalesced layers against schema: each leaf
// error names the last layer that sets its field (or, for a missing
// required field, its parent) and the field there.
func violations(schema []byte, layers []valuesLayer) []violation {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil // the render refuses an unreadable schema (exit 4 naming it)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{}) // a $ref to a file or URL is never followed
	if c.AddResource("values.schema.json", doc) != nil {
		return nil
	}
	sch, err := c.Compile("values.schema.json")
	if err != nil {
		return nil
	}
	values := map[string]any{}
	for _, l := range layers {
		values = coalesce(values, l.values)
	}
	js, err := json.Marshal(values)
	if err != nil {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(sch.Validate(inst), &ve) {
		return nil
	}
	printer := message.NewPrinter(language.English)
	var out []violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, x := range e.Causes {
				walk(x)
			}
			return
		}
		l := layers[0]
		for i := len(layers) - 1; i >= 0; i-- {
			if sets(layers[i].values, e.InstanceLocation) {
				l = layers[i]
				break
			}
		}
		field := strings.Join(e.InstanceLocation, ".")
		if l.prefix != "" {
			field = strings.TrimSuffix(l.prefix+"."+field, ".")
		}
		if field == "" {
			field = "(values)"
		}
		out = append(out, violation{file: l.file, field: field, msg: e.ErrorKind.LocalizedString(printer)})
	}
	walk(ve)
	sort.Slice(out, func(i, j int) bool { // the validator's causes come in map order
		if out[i].field != out[j].field {
			return out[i].field < out[j].field
		}
		return out[i].msg < out[j].msg
	})
	return out
}

// sets reports whether values has the field at loc.
func sets(values map[string]any, loc []string) bool {
	var cur any = values
	for _, k := range loc {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[k]; !ok {
			return false
		}
	}
	return len(loc) > 0 || len(values) > 0
}

// noLoader loads nothing: a values schema is judged by itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a values schema may not load other schemas", url)
}
