package render_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// FuzzDecodeManifests: the manifest reader takes untrusted repository
// content. It must never panic, and whatever it accepts must have an identity
// and hash.
func FuzzDecodeManifests(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: p}}]\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}",
		"---\n---\n",
		"a: &a [1]\nb: *a\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: 7}]}\n",
		"\x00\x01",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := render.DecodeManifests(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, exitcode.ErrInvalid) {
				t.Fatalf("error is not an invalid-input error: %v", err)
			}
			return
		}
		for _, o := range objs {
			id := o.ID()
			if id.Kind == "" || id.Name == "" || id.Version == "" {
				t.Fatalf("accepted an object without identity: %+v", id)
			}
			_ = render.Containers(o)
		}
		if _, err := render.Hash(objs); err != nil {
			t.Fatalf("accepted objects do not hash: %v", err)
		}
	})
}

// FuzzCanonical holds render.Canonical to an independent RFC 8785
// implementation (github.com/gowebpki/jcs over encoding/json's bytes) for
// every object the manifest reader accepts: the rendered hash is a contract,
// so the fast path must give the same bytes.
func FuzzCanonical(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {b: \"<&>\\u2028\", n: \"1e21\"}\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"n\":[1e21,0.1,-0,1152921504606846977,5e-324]}}",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {\"\\u00e9\": \"\\U0001F600\", \"\\u20ac\": x}}\nspec: {a: [], b: {}, c: ~, d: 0x10, e: .inf}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := render.DecodeManifests(data, "fuzz.yaml")
		if err != nil {
			return
		}
		for _, o := range objs {
			assertCanonical(t, o)
		}
	})
}

// assertCanonical compares render.Canonical with gowebpki/jcs; when
// encoding/json refuses the object both must refuse it.
func assertCanonical(t *testing.T, o render.Object) {
	t.Helper()
	got, err := render.Canonical(o)
	raw, jerr := json.Marshal(o.Map)
	if jerr != nil {
		if err == nil {
			t.Fatalf("Canonical accepted what encoding/json refuses (%v): %s", jerr, got)
		}
		return
	}
	want, werr := jcs.Transform(raw)
	if werr != nil || err != nil {
		t.Fatalf("Canonical: %v; jcs: %v", err, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Canonical differs from gowebpki/jcs:\n got %s\nwant %s", got, want)
	}
}
