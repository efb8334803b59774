package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// TestRenderHostileSchema: `throughline render` of a chart app, and of a
// kustomization's helmCharts, whose values.schema.json refers to a server
// (as a cloud metadata endpoint would answer) is refused with exit 3 (rule
// schema-outside-chart) naming the schema file; the server is never asked
// and the message does not echo its address.
func TestRenderHostileSchema(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = fmt.Fprint(w, `{"description": "AKIA-METADATA"}`)
	}))
	defer srv.Close()
	schema := `{"type": "object", "properties": {"a": {"$ref": "` + srv.URL + `/x.json"}}}`
	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {v: ok}\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		file  string
	}{
		{"chart app", map[string]string{"apps/c/Chart.yaml": chart, "apps/c/templates/cm.yaml": cm,
			"apps/c/values.schema.json": schema}, "apps/c/values.schema.json"},
		{"helmCharts", map[string]string{"apps/c/kustomization.yaml": "helmCharts: [{name: c, version: 0.1.0, releaseName: r}]\n",
			"apps/c/charts/c/Chart.yaml": chart, "apps/c/charts/c/templates/cm.yaml": cm,
			"apps/c/charts/c/values.schema.json": schema}, "apps/c/charts/c/values.schema.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := chartRoot(t, tc.files)
			r := runCLI(t, "render", "--root", root, root+"/apps/c")
			if r.code != exitcode.Refused || !strings.Contains(r.stderr, render.RuleSchemaOutsideChart) ||
				!strings.Contains(r.stderr, tc.file) {
				t.Errorf("exit %d, want 3 (%s) naming %s\n%s", r.code, render.RuleSchemaOutsideChart, tc.file, r.stderr)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the schema reached the server %d time(s)", n)
			}
			for _, leak := range []string{srv.URL, "127.0.0.1", "AKIA"} {
				if strings.Contains(r.stdout+r.stderr, leak) {
					t.Errorf("the output echoes %q:\n%s%s", leak, r.stdout, r.stderr)
				}
			}
		})
	}
}
