package v1alpha1_test

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// crdFile is the shipped CustomResourceDefinition of the Acceptance.
const crdFile = "../../deploy/crds/throughline.dev_acceptances.yaml"

// enums are the values of the API's string enums; where the schema declares
// an enum for such a field, it must list exactly these.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[v1alpha1.Outcome]():       {"Verified", "Pending", "Unverifiable", "Mismatch"},
	reflect.TypeFor[v1alpha1.MatchKind]():     {"Exact", "IndexChild", "ConfigDigest"},
	reflect.TypeFor[metav1.ConditionStatus](): {"True", "False", "Unknown"},
	reflect.TypeFor[v1alpha1.Comparison]():    {"<", "<=", ">", ">=", "==", "!="},
	reflect.TypeFor[v1alpha1.CheckVerdict]():  {"Pending", "Passed", "Failed", "Unverifiable"},
}

func readCRD(t *testing.T) *apiextv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextv1.CustomResourceDefinition
	if err := sigyaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("%s: %v", crdFile, err)
	}
	return &crd
}

// TestCRDNames checks the CRD's group, names and version against
// GroupVersion and the kind constants.
func TestCRDNames(t *testing.T) {
	t.Parallel()
	crd := readCRD(t)
	gvk, gvr := v1alpha1.AcceptanceGVK(), v1alpha1.AcceptanceGVR()
	for _, c := range []struct{ what, got, want string }{
		{"apiVersion", crd.APIVersion, "apiextensions.k8s.io/v1"},
		{"kind", crd.Kind, "CustomResourceDefinition"},
		{"metadata.name", crd.Name, gvr.Resource + "." + gvr.Group},
		{"spec.group", crd.Spec.Group, gvk.Group},
		{"spec.names.kind", crd.Spec.Names.Kind, gvk.Kind},
		{"spec.names.listKind", crd.Spec.Names.ListKind, v1alpha1.AcceptanceListGVK().Kind},
		{"spec.names.plural", crd.Spec.Names.Plural, gvr.Resource},
		{"spec.names.singular", crd.Spec.Names.Singular, strings.ToLower(gvk.Kind)},
		{"spec.scope", string(crd.Spec.Scope), string(apiextv1.NamespaceScoped)},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s = %q, want %q", crdFile, c.what, c.got, c.want)
		}
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s: %d versions, want one (%s)", crdFile, len(crd.Spec.Versions), gvk.Version)
	}
	v := crd.Spec.Versions[0]
	if v.Name != gvk.Version || !v.Served || !v.Storage {
		t.Errorf("%s: version %q served=%v storage=%v, want %q served and stored", crdFile, v.Name, v.Served, v.Storage, gvk.Version)
	}
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("%s: no status subresource (the verifier writes status through it)", crdFile)
	}
}

// TestCRDSchemaMatchesTypes walks the Acceptance type (json tags, with
// reflect) and the CRD's openAPIV3Schema together: every Go field must be in
// the schema with a compatible type, every schema property must be a Go
// field, and a required property must be one Go always writes.
func TestCRDSchemaMatchesTypes(t *testing.T) {
	t.Parallel()
	crd := readCRD(t)
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
		t.Fatalf("%s: no openAPIV3Schema", crdFile)
	}
	compareSchema(t, "", reflect.TypeFor[v1alpha1.Acceptance](), crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
}

// jsonField is one field as encoding/json sees it.
type jsonField struct {
	name      string
	goName    string
	typ       reflect.Type
	omitempty bool
}

// jsonFields lists typ's fields by their json names, inlining embedded
// structs without a name.
func jsonFields(typ reflect.Type) []jsonField {
	var out []jsonField
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		o := strings.Split(opts, ",")
		out = append(out, jsonField{name: name, goName: f.Name, typ: f.Type, omitempty: slices.Contains(o, "omitempty") || slices.Contains(o, "omitzero")})
	}
	return out
}

// opaque types are objects the schema does not describe field by field.
var opaque = map[reflect.Type]bool{
	reflect.TypeFor[metav1.ObjectMeta](): true,
	reflect.TypeFor[metav1.ListMeta]():   true,
}

func compareSchema(t *testing.T, path string, typ reflect.Type, s *apiextv1.JSONSchemaProps) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	where := path
	if where == "" {
		where = "(root)"
	}
	want := ""
	switch {
	case typ == reflect.TypeFor[metav1.Time]():
		if s.Type != "string" || s.Format != "date-time" {
			t.Errorf("%s: Go %s, schema type %q format %q, want string/date-time", where, typ, s.Type, s.Format)
		}
		return
	case typ == reflect.TypeFor[metav1.Duration]():
		if s.Type != "string" {
			t.Errorf("%s: Go %s, schema type %q, want string (a Go duration)", where, typ, s.Type)
		}
		return
	case opaque[typ]:
		want = "object"
	default:
		switch typ.Kind() {
		case reflect.String:
			want = "string"
		case reflect.Bool:
			want = "boolean"
		case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
			want = "integer"
		case reflect.Float32, reflect.Float64:
			want = "number"
		case reflect.Slice:
			want = "array"
		case reflect.Map, reflect.Struct:
			want = "object"
		default:
			t.Errorf("%s: Go type %s has no schema mapping in this test", where, typ)
			return
		}
	}
	if s.Type != want {
		t.Errorf("%s: Go %s, schema type %q, want %q", where, typ, s.Type, want)
		return
	}
	if f := map[reflect.Kind]string{reflect.Int32: "int32", reflect.Int64: "int64"}[typ.Kind()]; s.Format != "" && s.Format != f {
		t.Errorf("%s: Go %s, schema format %q", where, typ, s.Format)
	}
	if vals, ok := enums[typ]; ok && len(s.Enum) > 0 {
		var got []string
		for _, e := range s.Enum {
			var v string
			if err := sigyaml.Unmarshal(e.Raw, &v); err != nil {
				t.Errorf("%s: enum value %s: %v", where, e.Raw, err)
			}
			got = append(got, v)
		}
		if !sameSet(got, vals) {
			t.Errorf("%s: schema enum %v, Go %s has %v", where, got, typ, vals)
		}
	}
	switch {
	case opaque[typ]:
	case typ.Kind() == reflect.Slice:
		if s.Items == nil || s.Items.Schema == nil {
			t.Errorf("%s: array without an items schema", where)
			return
		}
		compareSchema(t, path+"[]", typ.Elem(), s.Items.Schema)
	case typ.Kind() == reflect.Map:
		if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			t.Errorf("%s: map without an additionalProperties schema", where)
			return
		}
		compareSchema(t, path+"{}", typ.Elem(), s.AdditionalProperties.Schema)
	case typ.Kind() == reflect.Struct:
		compareObject(t, path, typ, s)
	}
}

func compareObject(t *testing.T, path string, typ reflect.Type, s *apiextv1.JSONSchemaProps) {
	t.Helper()
	fields := map[string]jsonField{}
	for _, f := range jsonFields(typ) {
		fields[f.name] = f
		prop, ok := s.Properties[f.name]
		if !ok {
			t.Errorf("%s: Go field %s.%s (json %q) is not in the CRD schema", path+"."+f.name, typ, f.goName, f.name)
			continue
		}
		compareSchema(t, path+"."+f.name, f.typ, &prop)
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := fields[n]; !ok {
			t.Errorf("%s: schema property %q has no Go field in %s", path+"."+n, n, typ)
		}
	}
	for _, r := range s.Required {
		if f, ok := fields[r]; !ok {
			t.Errorf("%s: required %q has no Go field in %s", path, r, typ)
		} else if f.omitempty {
			t.Errorf("%s: required %q is omitempty in Go %s: an object Go writes could be refused", path, r, typ)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
