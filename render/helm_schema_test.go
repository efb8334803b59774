package render_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

// schemaServer is a server that answers every request as a cloud metadata
// endpoint would, and counts them: a schema that reaches it is an SSRF.
func schemaServer(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	hits = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"type": "object", "description": "AccessKeyId AKIA-METADATA-TOKEN"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// TestSchemaReferencesStayInsideTheChart: a values.schema.json (of the
// chart, of a subchart, of a chart under a kustomization's helmCharts) that
// names anything but a fragment of itself, a file of the chart or a JSON
// Schema draft is refused with rule schema-outside-chart (exit 3) naming
// the keyword, where it is and the file, before anything is fetched or
// opened; the target is never echoed.
func TestSchemaReferencesStayInsideTheChart(t *testing.T) {
	srv, hits := schemaServer(t)
	fifo := filepath.Join(t.TempDir(), "schema.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // release a reader left blocked on the FIFO by a failing run
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
	obj := func(inner string) string { return `{"type": "object", "properties": {"a": ` + inner + `}}` }
	cases := []struct {
		name   string
		schema string // of the chart at the app, or of the subchart when sub
		sub    bool
		kust   bool   // render the chart through a kustomization's helmCharts
		field  string // the JSON pointer and keyword the refusal names; "" when only the loader sees it
	}{
		{name: "http $ref", schema: obj(`{"$ref": "` + srv + `/x.json"}`), field: "/properties/a/$ref"},
		{name: "https $ref", schema: obj(`{"$ref": "https://schemas.example.test/x.json"}`), field: "/properties/a/$ref"},
		{name: "$schema to an http URL", schema: `{"$schema": "` + srv + `/meta.json", "type": "object"}`, field: "/$schema"},
		{name: "file:///proc/self/environ", schema: obj(`{"$ref": "file:///proc/self/environ"}`), field: "/properties/a/$ref"},
		{name: "absolute path", schema: obj(`{"$ref": "/etc/passwd"}`), field: "/properties/a/$ref"},
		{name: "a FIFO", schema: obj(`{"$ref": "file://` + fifo + `"}`), field: "/properties/a/$ref"},
		{name: "../ out of the chart", schema: obj(`{"$ref": "../../../../etc/passwd"}`), field: "/properties/a/$ref"},
		{name: "$id moves the base to a server", schema: `{"$id": "` + srv + `/", "type": "object", ` +
			`"properties": {"a": {"$ref": "x.json"}}}`, field: "/properties/a/$ref"},
		{name: "a nested $id moves the base", schema: `{"type": "object", "properties": {"a": {"$id": "https://schemas.example.test/a/", ` +
			`"properties": {"b": {"$ref": "x.json"}}}}}`, field: "/properties/a/properties/b/$ref"},
		{name: "$id to a file URL", schema: `{"$id": "file:///proc/self/", "properties": {"a": {"$ref": "environ"}}}`, field: "/$id"},
		{name: "$dynamicRef", schema: obj(`{"$dynamicRef": "` + srv + `/x.json#meta"}`), field: "/properties/a/$dynamicRef"},
		{name: "$recursiveRef", schema: `{"$schema": "https://json-schema.org/draft/2019-09/schema", ` +
			`"properties": {"a": {"$recursiveRef": "` + srv + `/x.json"}}}`, field: "/properties/a/$recursiveRef"},
		{name: "urn", schema: obj(`{"$ref": "urn:example:schema"}`), field: "/properties/a/$ref"},
		{name: "in an array of subschemas", schema: `{"allOf": [{"type": "object"}, {"$ref": "` + srv + `/x.json"}]}`,
			field: "/allOf/1/$ref"},
		{name: "a property named like a keyword", schema: `{"properties": {"$ref": {"$ref": "` + srv + `/x.json"}}}`,
			field: "/properties/$ref/$ref"},
		{name: "subchart", sub: true, schema: obj(`{"$ref": "` + srv + `/x.json"}`), field: "/properties/a/$ref"},
		{name: "through helmCharts", kust: true, schema: obj(`{"$ref": "` + srv + `/x.json"}`), field: "/properties/a/$ref"},
		{name: "through helmCharts, $schema", kust: true, schema: `{"$schema": "` + srv + `/meta.json"}`, field: "/$schema"},
		// What only the validator's loader sees: a reference inside a value
		// (default) the walk leaves alone, made a schema by a fragment $ref.
		{name: "loader: a schema hidden in default", schema: `{"properties": {"a": {"$ref": "#/properties/b/default"}, ` +
			`"b": {"default": {"$ref": "` + srv + `/x.json"}}}}`},
		{name: "loader: a chart file that is not there", schema: obj(`{"$ref": "missing.json"}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			files := map[string]string{
				"app/Chart.yaml":        hostileChart,
				"app/templates/cm.yaml": fmt.Sprintf(configMapTpl, "ok"),
				"app/values.yaml":       "a: {}\n",
			}
			schemaFile := "app/values.schema.json"
			switch {
			case tc.sub:
				files["app/Chart.yaml"] = hostileChart + "dependencies: [{name: sub, version: 1.0.0}]\n"
				files["app/charts/sub/Chart.yaml"] = "apiVersion: v2\nname: sub\nversion: 1.0.0\n"
				files["app/values.yaml"] = "sub: {a: {}}\n"
				schemaFile = "app/charts/sub/values.schema.json"
			case tc.kust:
				delete(files, "app/Chart.yaml")
				delete(files, "app/templates/cm.yaml")
				delete(files, "app/values.yaml")
				files["app/kustomization.yaml"] = "helmCharts: [{name: c, version: 0.1.0, releaseName: r}]\n"
				files["app/charts/c/Chart.yaml"] = hostileChart
				files["app/charts/c/templates/cm.yaml"] = fmt.Sprintf(configMapTpl, "ok")
				schemaFile = "app/charts/c/values.schema.json"
			}
			files[schemaFile] = tc.schema
			root := writeTree(t, files)
			type result struct{ err error }
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				_, err := renderOpts(render.Options{Root: root, Path: "app"})
				done <- result{err}
			}()
			var err error
			select {
			case r := <-done:
				err = r.err
			case <-time.After(20 * time.Second):
				t.Fatal("the render hangs on the schema")
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the render took %s", d)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the schema reached the server %d time(s)", n)
			}
			var r *exitcode.Refusal
			if !errors.As(err, &r) || r.Rule != render.RuleSchemaOutsideChart || exitcode.Code(err) != exitcode.Refused {
				t.Fatalf("got %v (exit %d), want a %s refusal", err, exitcode.Code(err), render.RuleSchemaOutsideChart)
			}
			msg := err.Error()
			if !strings.Contains(msg, schemaFile) {
				t.Errorf("the message does not name %s: %s", schemaFile, msg)
			}
			if tc.field != "" && r.Field != tc.field {
				t.Errorf("field %q, want %q: %s", r.Field, tc.field, msg)
			}
			for _, leak := range []string{srv, "127.0.0.1", "schemas.example.test", "environ", fifo, "passwd", "AKIA",
				"invalid character", "example:schema"} {
				if strings.Contains(msg, leak) {
					t.Errorf("the message echoes %q: %s", leak, msg)
				}
			}
		})
	}
}

// TestSchemaInsideTheChartValidates: a draft's metaschema, a fragment of
// the schema and a file of the chart are what a schema may name; the
// values are validated against them (a file of the chart included).
func TestSchemaInsideTheChartValidates(t *testing.T) {
	t.Parallel()
	schema := `{"$schema": "https://json-schema.org/draft-07/schema#", "type": "object",
		"definitions": {"n": {"type": "integer"}},
		"properties": {"replicas": {"$ref": "#/definitions/n"}, "port": {"$ref": "defs/port.json"},
		"name": {"$ref": "defs/port.json#/definitions/name"}}}`
	// The value each rejection names: testdata/schema-inside-chart.golden.
	msgs := golden.ErrorLines(t, "testdata/schema-inside-chart.golden", 3)
	for _, tc := range []struct {
		name, values string
		code         int
	}{
		{"valid", "replicas: 2\nport: 8080\nname: web\n", exitcode.OK},
		{"a fragment rejects", "replicas: two\nport: 8080\n", exitcode.Invalid},
		{"a chart file rejects", "replicas: 2\nport: 70000\n", exitcode.Invalid},
		{"a fragment of a chart file rejects", "name: \"\"\n", exitcode.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := writeTree(t, map[string]string{
				"app/Chart.yaml":         hostileChart,
				"app/templates/cm.yaml":  fmt.Sprintf(configMapTpl, "ok"),
				"app/values.schema.json": schema,
				"app/defs/port.json": `{"type": "integer", "maximum": 65535,
					"definitions": {"name": {"type": "string", "minLength": 1}}}`,
				"app/values.yaml": tc.values,
			})
			_, err := renderOpts(render.Options{Root: root, Path: "app"})
			if got := exitcode.Code(err); got != tc.code {
				t.Fatalf("exit %d, want %d: %v", got, tc.code, err)
			}
			if err != nil {
				if f := invalidFile(t, err); f != "app/values.schema.json" {
					t.Errorf("names %s, not the schema file: %v", f, err)
				}
				msgs(tc.name, err)
			}
		})
	}
}
