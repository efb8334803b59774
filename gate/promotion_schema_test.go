package gate

import (
	"strings"
	"testing"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// TestValuesViolations: each violated field is named in the last layer that
// sets it; a $ref to a file of the machine is never loaded.
func TestValuesViolations(t *testing.T) {
	t.Parallel()
	layer := func(file, prefix, y string) valuesLayer {
		l := valuesLayer{file: file, prefix: prefix}
		if err := sigyaml.Unmarshal([]byte(y), &l.values); err != nil {
			t.Fatal(err)
		}
		return l
	}
	defaults := layer("chart values.yaml", "", "size: 1\nnote: x\n")
	for _, tc := range []struct {
		name   string
		layers []valuesLayer
		want   []string // file field
	}{
		{"valid", []valuesLayer{defaults, layer("values-production.yaml", "", "size: 3\n")}, nil},
		{"values file", []valuesLayer{defaults, layer("values-production.yaml", "", "size: 30\n")}, []string{"values-production.yaml size"}},
		{"inline over the file", []valuesLayer{defaults, layer("values-production.yaml", "", "size: 30\n"),
			layer("kustomization.yaml", "helmCharts[0].valuesInline", "note: 7\n")},
			[]string{"kustomization.yaml helmCharts[0].valuesInline.note", "values-production.yaml size"}},
		{"null removes the default", []valuesLayer{layer("chart values.yaml", "", "size: 1000\n"), layer("v.yaml", "", "size: null\n")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range violations([]byte(chartfixture.ValuesSchema), tc.layers) {
				got = append(got, v.file+" "+v.field)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("violations %q, want %q", got, tc.want)
			}
		})
	}
	ref := `{"properties": {"size": {"$ref": "file:///etc/passwd"}}}`
	if v := violations([]byte(ref), []valuesLayer{defaults}); v != nil {
		t.Fatalf("a schema with a $ref to a file: %+v (nothing is loaded, the render refuses it)", v)
	}
}

// FuzzValuesViolations: a values schema and values come from the chart and
// the change under review. Whatever they hold, violations never panics,
// loads nothing and names a file of its layers.
func FuzzValuesViolations(f *testing.F) {
	f.Add([]byte(chartfixture.ValuesSchema), []byte("size: 30\n"))
	f.Add([]byte(`{"$ref": "http://127.0.0.1:1/x"}`), []byte("a: [1, 2]\n"))
	f.Add([]byte(`{"required": ["a"], "properties": {"a": {"type": "array", "items": {"type": "string"}}}}`), []byte("a: [1]\n"))
	f.Fuzz(func(t *testing.T, schema, values []byte) {
		l := valuesLayer{file: "values.yaml"}
		_ = sigyaml.Unmarshal(values, &l.values)
		for _, v := range violations(schema, []valuesLayer{{file: "defaults"}, l}) {
			if v.file != "values.yaml" && v.file != "defaults" {
				t.Fatalf("violation in %q", v.file)
			}
		}
	})
}
