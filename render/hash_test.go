package render_test

import (
	"math"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

func decode(t *testing.T, yaml string) []render.Object {
	t.Helper()
	objs, err := render.DecodeManifests([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestHashIgnoresFormattingAndOrder(t *testing.T) {
	t.Parallel()
	a := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
spec:
  replicas: 3
  template:
    spec:
      containers: [{name: web, image: "r/web@sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: prod}
spec: {ports: [{port: 80}]}
`
	b := `# the same objects, other order, other style
{"kind": "Service", "apiVersion": "v1", "spec": {"ports": [{"port": 80}]}, "metadata": {"namespace": "prod", "name": "web"}}
---
kind: Deployment
spec:
  template:
    spec:
      containers:
        - image: r/web@sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432
          name: web
  replicas: 3.0
metadata: {namespace: prod, name: web}
apiVersion: apps/v1
`
	ha, err := render.Hash(decode(t, a))
	if err != nil {
		t.Fatal(err)
	}
	hb, err := render.Hash(decode(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb {
		t.Errorf("same objects, different hashes: %s vs %s", ha, hb)
	}
	if !strings.HasPrefix(ha, "sha256:") || len(ha) != len("sha256:")+64 {
		t.Errorf("hash %q is not sha256:<64 hex>", ha)
	}
}

func TestHashChangesWithContent(t *testing.T) {
	t.Parallel()
	base := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n"
	h0, _ := render.Hash(decode(t, base))
	for name, y := range map[string]string{
		"value":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: w}\n",
		"type":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: \"1\"}\n",
		"namespace": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\ndata: {k: v}\n",
		"extra":     base + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
	} {
		h, err := render.Hash(decode(t, y))
		if err != nil {
			t.Fatal(err)
		}
		if h == h0 {
			t.Errorf("%s: changing the objects did not change the hash", name)
		}
	}
}

// TestCanonicalForm pins RFC 8785 details: keys sorted by UTF-16 code
// units, integers without a fraction, minimal escapes.
func TestCanonicalForm(t *testing.T) {
	t.Parallel()
	objs := decode(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"a<b>&\"}\ndata: {\"\U0001F600\": x, \"\uFB01\": y, b: \"tab\\there\"}\nn: 1.50\nm: 100\n")
	got, err := render.Canonical(objs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"v1","data":{"b":"tab\there","` + "\U0001F600" + `":"x","` + "\uFB01" + `":"y"},"kind":"ConfigMap","m":100,"metadata":{"name":"a<b>&"},"n":1.5}`
	if string(got) != want {
		t.Errorf("canonical form\n got %s\nwant %s", got, want)
	}
	h1, _ := render.ObjectHash(objs[0])
	h2, _ := render.ObjectHash(objs[0])
	if h1 != h2 || !strings.HasPrefix(h1, "sha256:") {
		t.Errorf("object hash %q unstable or malformed", h1)
	}
}

func TestHashEmptySet(t *testing.T) {
	t.Parallel()
	h, err := render.Hash(nil)
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of the empty string.
	if h != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("empty set hash %s", h)
	}
}

// TestCanonicalMatchesEncodingJSON: values YAML cannot produce but Go code
// can (nil slices and maps, invalid UTF-8, integers beyond 2^53) give the
// bytes of encoding/json + RFC 8785, as computed by gowebpki/jcs.
func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]any{
		"nil slice":    []any(nil),
		"nil map":      map[string]any(nil),
		"invalid utf8": "a\xffb",
		"html":         "<a href='x'>&</a>\u2028\u2029",
		"big int":      int64(1<<62 + 1),
		"float":        []any{0.1, 1e21, 1e-7, math.Copysign(0, -1), 5e-324},
		"nested":       map[string]any{"é": []any{nil, true, "€"}, "\U0001F600": map[string]any{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assertCanonical(t, render.Object{Map: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "v": v}})
		})
	}
}
