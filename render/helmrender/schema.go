package helmrender

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// Helm validates values with its own loaders (file://, http://, https://,
// urn:), which fetch whatever a chart's values.schema.json names. Here the
// schemas are validated as Helm does (each chart's values against its own
// schema, then each dependency's), with two differences:
//
//   - checkSchemas walks every schema first and refuses a reference that is
//     not a fragment of the schema, a file of the chart, or a JSON Schema
//     draft's metaschema (which the validator carries and never fetches),
//     naming the keyword and where it is, never its target; an $id may name
//     the schema by an http(s) or urn URL (it is a name, never read), and
//     under it only fragments may be referred to;
//   - the validator's loader (chartLoader) serves the chart's own files from
//     memory and refuses everything else, so what the walk does not see (a
//     schema hidden in a value and reached by a fragment, a base moved by a
//     nested $id) still fetches nothing and opens nothing.

// schemaURL is the URL a chart's schema is compiled under, as Helm does: a
// relative reference names a file from the chart's root.
const schemaURL = "file:///values.schema.json"

// refKeywords are the keywords whose string value names another schema or
// moves the base others are resolved against.
var refKeywords = map[string]bool{"$ref": true, "$schema": true, "$id": true, "$dynamicRef": true, "$recursiveRef": true}

// valueKeywords hold instance values, not schemas: the walk does not look
// inside them (the loader still refuses what a fragment makes of them).
var valueKeywords = map[string]bool{"default": true, "examples": true, "example": true, "const": true, "enum": true}

// nameKeywords hold a map from names (properties, definitions) to schemas.
var nameKeywords = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
	"dependentSchemas": true, "dependencies": true}

// metaschemas are the drafts whose metaschema the validator carries
// (jsonschema/v6's draftFromURL), without the scheme.
var metaschemas = map[string]bool{
	"json-schema.org/schema":               true,
	"json-schema.org/draft/2020-12/schema": true,
	"json-schema.org/draft/2019-09/schema": true,
	"json-schema.org/draft-07/schema":      true,
	"json-schema.org/draft-06/schema":      true,
	"json-schema.org/draft-04/schema":      true,
}

// chartSchema is the schema of one chart of the tree: file names it from
// the root chart ("values.schema.json", "charts/sub/values.schema.json").
type chartSchema struct {
	chart *chart.Chart
	file  string
}

// schemas lists the schemas of c and of its dependencies, depth first.
func schemas(c *chart.Chart, dir string) []chartSchema {
	var out []chartSchema
	if len(c.Schema) > 0 {
		out = append(out, chartSchema{chart: c, file: path.Join(dir, render.ValuesSchemaFile)})
	}
	deps := c.Dependencies()
	sort.SliceStable(deps, func(i, j int) bool { return deps[i].Name() < deps[j].Name() })
	for _, d := range deps {
		out = append(out, schemas(d, path.Join(dir, "charts", d.Name()))...)
	}
	return out
}

// checkSchemas refuses the first reference of any schema of c's tree that
// leaves the chart (rule render.RuleSchemaOutsideChart).
func checkSchemas(c *chart.Chart) error {
	for _, s := range schemas(c, "") {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.chart.Schema))
		if err != nil {
			return &render.ChartError{File: s.file, Err: fmt.Errorf("parsing the schema: %w", err)}
		}
		if err := walkSchema(doc, "", false, false); err != nil {
			var r *exitcode.Refusal
			if errors.As(err, &r) {
				r.Object = "chart " + s.chart.Name()
			}
			return &render.ChartError{File: s.file, Err: err}
		}
	}
	return nil
}

// walkSchema visits v (at the JSON pointer ptr) and everything under it but
// instance values; names says v is a map from names to schemas, named that
// an $id around v names the schema by a URL (a relative reference would
// resolve to that URL).
func walkSchema(v any, ptr string, names, named bool) error {
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["$id"].(string); ok && !names && namesByURL(id) {
			named = true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := ptr + "/" + escapePointer(k)
			if names {
				if err := walkSchema(v[k], p, false, named); err != nil {
					return err
				}
				continue
			}
			if s, ok := v[k].(string); ok && refKeywords[k] {
				if reason := refOutside(k, s, named); reason != "" {
					return &exitcode.Refusal{Rule: render.RuleSchemaOutsideChart, Field: p,
						Reason: reason + " (rule " + render.RuleSchemaOutsideChart + ")"}
				}
				continue
			}
			if valueKeywords[k] {
				continue
			}
			if err := walkSchema(v[k], p, nameKeywords[k], named); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := walkSchema(e, ptr+"/"+strconv.Itoa(i), false, named); err != nil {
				return err
			}
		}
	}
	return nil
}

// refOutside says why the value of keyword leaves the chart ("" when it
// does not), never quoting it; named says the schema around it is named by
// a URL (an $id), against which a relative reference would resolve.
func refOutside(keyword, v string, named bool) string {
	if keyword == "$id" && namesByURL(v) {
		return "" // a name: the validator fetches no $id
	}
	if keyword == "$schema" {
		if isMetaschema(v, false) {
			return ""
		}
		return keyword + " may name only a JSON Schema draft (https://json-schema.org/draft-07/schema, ...): " +
			"throughline fetches no metaschema"
	}
	if strings.HasPrefix(v, "#") || isMetaschema(v, true) {
		return ""
	}
	if named && keyword != "$id" {
		return keyword + " is relative to the URL the schema's $id names; a schema named by a URL may refer " +
			"only to fragments of itself (#/...)"
	}
	if reason := chartRelative(v); reason != "" {
		return keyword + " " + reason + "; a schema may name only a fragment of itself (#/...) or a file of the chart"
	}
	return ""
}

// namesByURL reports whether an $id of v names the schema by an absolute
// http, https or urn URL (without a fragment): a name the validator resolves
// references against, never a location it reads.
func namesByURL(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.Fragment != "" {
		return false
	}
	switch u.Scheme {
	case "http", "https":
		return u.Host != ""
	case "urn":
		return u.Opaque != ""
	}
	return false
}

// isMetaschema reports whether v names a draft's metaschema (any fragment
// of it when frag).
func isMetaschema(v string, frag bool) bool {
	doc, f, _ := strings.Cut(v, "#")
	if f != "" && !frag {
		return false
	}
	rest, ok := strings.CutPrefix(doc, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(doc, "http://")
	}
	return ok && metaschemas[rest]
}

// chartRelative says why v is not a path relative to the chart's root that
// stays inside it ("" when it is).
func chartRelative(v string) string {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "" || u.Opaque != "":
		return "names a URL (scheme " + strconv.Quote(u.Scheme) + ")"
	case u.Host != "" || strings.HasPrefix(v, "//"):
		return "names a host"
	case strings.HasPrefix(u.Path, "/"):
		return "is an absolute path"
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == ".." {
			return "leaves the chart (..)"
		}
	}
	return ""
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// errNotInChart is the loader's refusal: its message does not name the URL
// (the library's LoadURLError does; it is never shown).
var errNotInChart = errors.New("not a file of the chart")

// chartLoader is the validator's only loader: file:///<path> is the file
// <path> of the chart, from memory; anything else is refused and recorded.
type chartLoader struct {
	files   map[string][]byte
	refused bool
}

func (l *chartLoader) Load(raw string) (any, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" || u.Host != "" || u.Opaque != "" {
		l.refused = true
		return nil, errNotInChart
	}
	data, ok := l.files[strings.TrimPrefix(path.Clean("/"+u.Path), "/")]
	if !ok {
		l.refused = true
		return nil, errNotInChart
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

// validateValues validates vals against the schema of c and, for each
// dependency given values, the dependency's values against its own, as
// Helm's ValidateAgainstSchema does, with chartLoader.
func validateValues(c *chart.Chart, vals map[string]any, dir string) error {
	if len(c.Schema) > 0 {
		file := path.Join(dir, render.ValuesSchemaFile)
		if err := validateOne(c, vals, file); err != nil {
			return err
		}
	}
	deps := c.Dependencies()
	sort.SliceStable(deps, func(i, j int) bool { return deps[i].Name() < deps[j].Name() })
	for _, d := range deps {
		raw, ok := vals[d.Name()]
		if !ok || raw == nil {
			continue
		}
		sub, ok := raw.(map[string]any)
		if !ok {
			if cv, isValues := raw.(common.Values); isValues {
				sub = cv
			} else {
				return &render.ChartError{File: path.Join(dir, "charts", d.Name(), render.ValuesSchemaFile),
					Err: fmt.Errorf("values: %s: an object (map) is expected, not %T", d.Name(), raw)}
			}
		}
		if err := validateValues(d, sub, path.Join(dir, "charts", d.Name())); err != nil {
			return err
		}
	}
	return nil
}

// validateOne compiles the schema of c with chartLoader and validates vals.
func validateOne(c *chart.Chart, vals map[string]any, file string) (reterr error) {
	defer func() {
		if r := recover(); r != nil {
			reterr = &render.ChartError{File: file, Err: fmt.Errorf("validating the values: %v", r)}
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.Schema))
	if err != nil {
		return &render.ChartError{File: file, Err: fmt.Errorf("parsing the schema: %w", err)}
	}
	l := &chartLoader{files: map[string][]byte{}}
	for _, f := range c.Raw {
		l.files[f.Name] = f.Data
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(l)
	if err := compiler.AddResource(schemaURL, doc); err != nil {
		return &render.ChartError{File: file, Err: fmt.Errorf("the schema: %w", err)}
	}
	sch, err := compiler.Compile(schemaURL)
	if l.refused {
		return &render.ChartError{File: file, Err: &exitcode.Refusal{Rule: render.RuleSchemaOutsideChart,
			Object: "chart " + c.Name(), Reason: "a reference of the schema resolves to something that is not a file of " +
				"the chart (rule " + render.RuleSchemaOutsideChart + ")"}}
	}
	if err != nil {
		return &render.ChartError{File: file, Err: fmt.Errorf("the schema: %w", err)}
	}
	if err := sch.Validate(vals); err != nil {
		msg := strings.TrimPrefix(err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n")
		return &render.ChartError{File: file, Err: fmt.Errorf("values: chart %s: %s", c.Name(), msg)}
	}
	return nil
}
