package render_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

const streamObjects = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod}
spec:
  replicas: 3
  template:
    spec:
      containers: [{name: web, image: "r/web@sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: prod}
data: {big: "1e21", text: "é\u2028<>&"}
`

// TestJSONStreamRoundTrip: what EncodeJSONStream writes reads back as the
// same objects with the same rendered hash as Hash computes.
func TestJSONStreamRoundTrip(t *testing.T) {
	t.Parallel()
	objs := decode(t, streamObjects)
	var b bytes.Buffer
	if err := render.EncodeJSONStream(&b, objs); err != nil {
		t.Fatal(err)
	}
	want, err := render.Hash(objs)
	if err != nil {
		t.Fatal(err)
	}
	got, hash, err := render.DecodeJSONStream(b.Bytes(), "cache")
	if err != nil {
		t.Fatalf("DecodeJSONStream: %v\n%s", err, b.String())
	}
	if hash != want || len(got) != len(objs) {
		t.Fatalf("hash %s (%d objects), want %s (%d)", hash, len(got), want, len(objs))
	}
	if again, _ := render.Hash(got); again != want {
		t.Errorf("Hash of the decoded objects %s, want %s", again, want)
	}
	if objs, hash, err := render.DecodeJSONStream(nil, "cache"); err != nil || len(objs) != 0 || hash == "" {
		t.Errorf("empty stream: %v %q %v", objs, hash, err)
	}
}

// TestJSONStreamRefuses: a stream edited by anyone who can write the
// cache is refused unless every document is exactly the canonical form
// the hash is computed over: another spelling of the same object, a
// duplicate name (which readers resolve differently), YAML, or trailing
// data would let the served bytes differ from what was checked.
func TestJSONStreamRefuses(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := render.EncodeJSONStream(&b, decode(t, streamObjects)); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	first, _, _ := strings.Cut(strings.TrimPrefix(good, "---\n"), "\n")
	cases := map[string]string{
		"spaces":              strings.Replace(good, `"kind":`, `"kind" :`, 1),
		"keys out of order":   strings.Replace(good, `{"apiVersion":"apps/v1","kind":"Deployment",`, `{"kind":"Deployment","apiVersion":"apps/v1",`, 1),
		"duplicate name":      strings.Replace(good, `{"apiVersion":"apps/v1",`, `{"apiVersion":"apps/v1","apiVersion":"apps/v1",`, 1),
		"number spelled 3.0":  strings.Replace(good, `"replicas":3`, `"replicas":3.0`, 1),
		"YAML document":       good + "---\nkind: Secret\n",
		"two objects a line":  "---\n" + first + first + "\n",
		"no leading ---":      strings.TrimPrefix(good, "---\n"),
		"no final newline":    strings.TrimSuffix(good, "\n"),
		"an array":            "---\n[1]\n",
		"empty document":      good + "---\n\n",
		"escaped differently": strings.Replace(good, `é`, `\u00e9`, 1),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if in == good {
				t.Fatal("the case does not change the stream")
			}
			_, _, err := render.DecodeJSONStream([]byte(in), "cache")
			if err == nil || exitcode.Code(err) != exitcode.Invalid || invalidFile(t, err) != "cache" {
				t.Errorf("DecodeJSONStream accepted or misreported it: %v", err)
			}
		})
	}
}

// FuzzDecodeJSONStream: whatever the cache holds, a stream that decodes is
// exactly what EncodeJSONStream writes for its objects, and its hash is
// Hash's.
func FuzzDecodeJSONStream(f *testing.F) {
	f.Add([]byte("---\n{\"a\":1}\n---\n{\"b\":[true,null,\"x\"]}\n"))
	f.Add([]byte("---\n{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, hash, err := render.DecodeJSONStream(data, "fuzz")
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := render.EncodeJSONStream(&b, objs); err != nil {
			t.Fatalf("re-encoding a decoded stream: %v", err)
		}
		if !bytes.Equal(b.Bytes(), data) {
			t.Fatalf("decoded %q, re-encodes as %q", data, b.Bytes())
		}
		if want, err := render.Hash(objs); err != nil || want != hash {
			t.Fatalf("hash %s, Hash %s (%v)", hash, want, err)
		}
	})
}
