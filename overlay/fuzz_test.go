package overlay

import (
	"bytes"
	"reflect"
	"testing"

	yaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// FuzzSetImageDigest: SetImageDigest never panics on any kustomization,
// and on success its output parses as a kustomization whose images: entry
// carries the digest, is equal as plain values to the input but for that
// one field, and is a fixed point of a second call.
func FuzzSetImageDigest(f *testing.F) {
	for _, in := range []string{
		"# top\nimages:\n  # the identity\n  - name: app   # x\n    newTag: '1.0@" + oldDigest + "'  # keep\nreplicas:\n  - name: a\n    count: 6\n",
		"images:\n- name: app\n  newTag: \"1.0\"\n",
		"images:\n- name: app\n  newTag: v1",
		"images:\n- name: app\n  digest: " + oldDigest + " # pinned\n",
		"images:\n- name: upstream/app\n  newName: app\n  newTag: 1.0\n",
		"images:\n- {name: app, newTag: v1}\n",
		"images:\n- name: app\n  newTag: |\n    1.0\n",
		"images:\n- name: app\n  newTag: &a v1\nx: *a\n",
		"metadata: {name: café}\nimages:\n  - name: \"app\"\n    newTag: 'it''s'\n",
		"- a\n",
		"",
	} {
		f.Add([]byte(in), "app", "1.1", newDigest)
	}
	f.Fuzz(func(t *testing.T, data []byte, name, tag, digest string) {
		out, changed, err := SetImageDigest(data, "k.yaml", name, tag, digest)
		if err != nil {
			return
		}
		if !changed {
			if !bytes.Equal(out, data) {
				t.Fatalf("unchanged, but the output differs:\n%q\n%q", data, out)
			}
			return
		}
		e := outputEntry(t, data, out, name)
		key, want := "digest", digest
		if _, ok := e.Field("digest"); !ok {
			if tag == "" {
				tag = "latest"
			}
			key, want = "newTag", tag+"@"+digest
		}
		if v, _ := e.Field(key); v != want {
			t.Fatalf("%s is %q, want %q:\n%q", key, v, want, out)
		}
		// Equal as plain values but for the edited field.
		before, after := decodeBoth(t, data, out)
		be, ae := imageEntry(before, e.Index), imageEntry(after, e.Index)
		if be == nil || ae == nil {
			t.Fatalf("images[%d] is not a mapping in the decoded input or output:\n%q\n%q", e.Index, data, out)
		}
		ae.set(key, be.get(key))
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("the output differs from the input beyond images[%d].%s:\n%q\n%q", e.Index, key, data, out)
		}
		// A second call changes nothing.
		again, changed, err := SetImageDigest(out, "k.yaml", name, tag, digest)
		if err != nil || changed || !bytes.Equal(again, out) {
			t.Fatalf("second call: changed %v, err %v", changed, err)
		}
	})
}

// outputEntry parses the output of an edit as a kustomization and finds
// the entry that renders name.
func outputEntry(t *testing.T, data, out []byte, name string) *ImageEntry {
	t.Helper()
	k, err := ParseKustomization("k.yaml", out)
	if err != nil {
		t.Fatalf("the output does not parse: %v\n%q", err, out)
	}
	e := k.ImageFor(name)
	if e == nil {
		t.Fatalf("the output has no entry for %q:\n%q\n%q", name, data, out)
	}
	return e
}

// decodeBoth decodes the input and the output of an edit as plain values.
func decodeBoth(t *testing.T, data, out []byte) (before, after any) {
	t.Helper()
	if err := yaml.Unmarshal(data, &before); err != nil {
		t.Fatalf("the input does not decode: %v", err)
	}
	if err := yaml.Unmarshal(out, &after); err != nil {
		t.Fatalf("the output does not decode: %v", err)
	}
	return before, after
}

// imageEntry is images[i] of a decoded kustomization (nil when it is not a
// mapping).
func imageEntry(doc any, i int) mapping {
	images, ok := asMapping(doc).get("images").([]any)
	if !ok || i >= len(images) {
		return nil
	}
	m := asMapping(images[i])
	if _, ok := m.(nilMap); ok {
		return nil
	}
	return m
}

// mapping is a decoded YAML mapping: map[string]any when every key is a
// string, else map[any]any.
type mapping interface {
	get(key string) any
	set(key string, v any)
}

type strMap map[string]any

func (m strMap) get(k string) any    { return m[k] }
func (m strMap) set(k string, v any) { m[k] = v }

type anyMap map[any]any

func (m anyMap) get(k string) any    { return m[k] }
func (m anyMap) set(k string, v any) { m[k] = v }

func asMapping(v any) mapping {
	switch m := v.(type) {
	case map[string]any:
		return strMap(m)
	case map[any]any:
		return anyMap(m)
	}
	return nilMap{}
}

type nilMap struct{}

func (nilMap) get(string) any  { return nil }
func (nilMap) set(string, any) {}

// FuzzPinImage: the edit pin makes (newTag set in the entry that renders
// name, or a new entry appended) never panics, and on success the output
// parses as a kustomization equal as plain values to the input but for
// that entry's newTag (or the appended entry).
func FuzzPinImage(f *testing.F) {
	for _, in := range []string{
		"# Staging.\nresources:\n  - ../../base\nimages:\n  # identity\n  - name: app\n    newTag: \"1.4.2\"   # informative\n\n# Replicas.\nreplicas:\n  - name: a\n    count: 2\n",
		"resources:\n- ../../base\n",
		"resources:\n  - ../../base",
		"resources:\n- ../../base\nimages:\n- name: app\n  # no tag here\n",
		"resources: [../../base]\nimages:\n  - name: other\n    newTag: 1.4.2\n  - name: app\n    newTag: '2.0'\n",
		"images:\n- name: up/app\n  newName: app\n",
		"images: [{name: app}]\n",
		"",
	} {
		f.Add([]byte(in), "app", "1.4.2@"+newDigest)
	}
	f.Fuzz(func(t *testing.T, data []byte, name, value string) {
		k, err := ParseKustomization("k.yaml", data)
		if err != nil || !k.ImagesEditable() {
			return
		}
		e := k.ImageFor(name)
		hadTag := false
		if e != nil {
			_, hadTag = e.Field("newTag")
		}
		switch {
		case e == nil:
			err = k.AppendImages([]NewImage{{Name: name, NewTag: value}})
		case e.Block():
			_, _, err = e.Set("newTag", value)
		default:
			return
		}
		if err != nil {
			return
		}
		out, err := k.Bytes()
		if err != nil {
			return
		}
		e2 := outputEntry(t, data, out, name)
		if v, _ := e2.Field("newTag"); v != value {
			t.Fatalf("newTag is %q, want %q:\n%q", v, value, out)
		}
		before, after := decodeBoth(t, data, out)
		if e == nil {
			// Drop the appended entry (and an images: key that came with it).
			m := asMapping(after)
			images, _ := m.get("images").([]any)
			if len(images) == 0 {
				t.Fatalf("no images: in the output:\n%q", out)
			}
			if len(images) == 1 && asMapping(before).get("images") == nil {
				switch a := after.(type) {
				case map[string]any:
					delete(a, "images")
				case map[any]any:
					delete(a, "images")
				}
			} else {
				m.set("images", images[:len(images)-1])
			}
		} else {
			be, ae := imageEntry(before, e.Index), imageEntry(after, e.Index)
			if be == nil || ae == nil {
				t.Fatalf("images[%d] is not a mapping in the decoded input or output:\n%q\n%q", e.Index, data, out)
			}
			if !hadTag {
				switch a := ae.(type) {
				case strMap:
					delete(a, "newTag")
				case anyMap:
					delete(a, "newTag")
				}
			} else {
				ae.set("newTag", be.get("newTag"))
			}
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("the output differs from the input beyond the edit:\n%q\n%q", data, out)
		}
	})
}
