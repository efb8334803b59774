package render_test

import (
	"testing"

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
			if !render.IsInputError(err) {
				t.Fatalf("error is not an InputError: %v", err)
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
