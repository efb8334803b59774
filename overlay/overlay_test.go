package overlay

import (
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
)

const (
	oldDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func TestSetImageDigest(t *testing.T) {
	t.Parallel()
	msgs := golden.ErrorLines(t, "testdata/set-image-digest.golden", 8)
	for _, tc := range []struct {
		name, in, image, tag string
		want                 string // "" with changed false: data unchanged
		changed              bool
		bad                  bool // an error: its message in testdata/set-image-digest.golden
		input                bool // the error is a *exitcode.InvalidInput
	}{
		{
			name:  "keeps comments and single quotes",
			in:    "# top\nimages:\n  # the identity\n  - name: app   # x\n    newTag: '1.0@" + oldDigest + "'  # keep\nreplicas:\n  - name: a\n    count: 6\n",
			image: "app", tag: "1.1", changed: true,
			want: "# top\nimages:\n  # the identity\n  - name: app   # x\n    newTag: '1.1@" + newDigest + "'  # keep\nreplicas:\n  - name: a\n    count: 6\n",
		},
		{
			name:  "double-quoted newTag",
			in:    "images:\n- name: app\n  newTag: \"1.0\"\n",
			image: "app", tag: "1.0", changed: true,
			want: "images:\n- name: app\n  newTag: \"1.0@" + newDigest + "\"\n",
		},
		{
			name:  "plain newTag, no tag is latest",
			in:    "images:\n- name: app\n  newTag: v1\n",
			image: "app", changed: true,
			want: "images:\n- name: app\n  newTag: latest@" + newDigest + "\n",
		},
		{
			name:  "digest field",
			in:    "images:\n- name: app\n  digest: " + oldDigest + " # pinned\n",
			image: "app", tag: "1.0", changed: true,
			want: "images:\n- name: app\n  digest: " + newDigest + " # pinned\n",
		},
		{
			name:  "found by newName",
			in:    "images:\n- name: upstream/app\n  newName: mirror/app\n  newTag: \"1.0@" + oldDigest + "\"\n",
			image: "mirror/app", tag: "1.0", changed: true,
			want: "images:\n- name: upstream/app\n  newName: mirror/app\n  newTag: \"1.0@" + newDigest + "\"\n",
		},
		{
			name:  "unchanged",
			in:    "images:\n- name: app\n  newTag: \"1.0@" + newDigest + "\"\n",
			image: "app", tag: "1.0",
		},
		{
			name:  "no entry",
			in:    "images:\n- name: other\n  newTag: v1\n",
			image: "app", bad: true, input: true,
		},
		{
			name:  "renamed entry is not found by its name",
			in:    "images:\n- name: app\n  newName: mirror/app\n  newTag: v1\n",
			image: "app", bad: true, input: true,
		},
		{
			name:  "flow entry",
			in:    "images:\n- {name: app, newTag: v1}\n",
			image: "app", bad: true, input: true,
		},
		{
			name:  "neither newTag nor digest",
			in:    "images:\n- name: app\n  newName: app\n",
			image: "app", bad: true, input: true,
		},
		{
			name:  "not one mapping",
			in:    "- a\n- b\n",
			image: "app", bad: true, input: true,
		},
		{
			name:  "two documents",
			in:    "images: []\n---\nimages: []\n",
			image: "app", bad: true, input: true,
		},
		{
			name:  "does not parse",
			in:    "images: [\n",
			image: "app", bad: true, input: true,
		},
		{
			name:  "value the quoting cannot carry",
			in:    "images:\n- name: app\n  newTag: v1\n",
			image: "app", tag: "a: b", bad: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, changed, err := SetImageDigest([]byte(tc.in), "k.yaml", tc.image, tc.tag, newDigest)
			if tc.bad {
				if err == nil {
					t.Fatal("no error")
				}
				var ie *exitcode.InvalidInput
				if errors.As(err, &ie) != tc.input || (tc.input && ie.File != "k.yaml") {
					t.Fatalf("error %v: *exitcode.InvalidInput %v, want %v naming k.yaml", err, !tc.input, tc.input)
				}
				msgs(tc.name, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Fatalf("changed %v, want %v", changed, tc.changed)
			}
			want := tc.want
			if !tc.changed {
				want = tc.in
			}
			if string(out) != want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, want)
			}
		})
	}
}

func TestImageEntrySet(t *testing.T) {
	t.Parallel()
	msgs := golden.ErrorLines(t, "testdata/image-entry-set.golden", 3)
	for _, tc := range []struct {
		name, in, image, key, value string
		want, old                   string
		replaced                    bool
		bad                         bool // an error: its message in testdata/image-entry-set.golden
	}{
		{
			name: "replace plain", in: "images:\n  - name: app\n    newTag: 1.4.2 # c\n",
			image: "app", key: "newTag", value: "1.4.2@" + newDigest, old: "1.4.2", replaced: true,
			want: "images:\n  - name: app\n    newTag: 1.4.2@" + newDigest + " # c\n",
		},
		{
			name: "replace single-quoted", in: "images:\n- name: app\n  newTag: '2.0'\n",
			image: "app", key: "newTag", value: "2.0@" + newDigest, old: "2.0", replaced: true,
			want: "images:\n- name: app\n  newTag: '2.0@" + newDigest + "'\n",
		},
		{
			name: "insert newTag quoted after the first key", in: "images:\n- name: app\n  # no tag here\n  newName: mirror/app\n",
			image: "app", key: "newTag", value: "1.10",
			want: "images:\n- name: app\n  newTag: \"1.10\"\n  # no tag here\n  newName: mirror/app\n",
		},
		{
			name: "insert newName plain", in: "images:\n    - name: app\n      newTag: \"1\"\n",
			image: "app", key: "newName", value: "mirror/app",
			want: "images:\n    - name: app\n      newName: mirror/app\n      newTag: \"1\"\n",
		},
		{
			name: "insert in the last line without newline", in: "images:\n- name: app",
			image: "app", key: "newTag", value: "1",
			// The line to insert has nowhere to go: Bytes refuses.
			bad: true,
		},
		{
			name: "flow entry", in: "images:\n- {name: app}\n",
			image: "app", key: "newTag", value: "1", bad: true,
		},
		{
			name: "block scalar", in: "images:\n- name: app\n  newTag: |\n    1.0\n",
			image: "app", key: "newTag", value: "2", bad: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := ParseKustomization("k.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			e := k.Image(tc.image)
			if e == nil {
				t.Fatalf("no entry %s", tc.image)
			}
			old, replaced, err := e.Set(tc.key, tc.value)
			var out []byte
			if err == nil {
				out, err = k.Bytes()
			}
			if tc.bad {
				if err == nil {
					t.Fatalf("no error (output %q)", out)
				}
				msgs(tc.name, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if old != tc.old || replaced != tc.replaced {
				t.Errorf("Set returned %q, %v; want %q, %v", old, replaced, tc.old, tc.replaced)
			}
			if string(out) != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tc.want)
			}
			if v, ok := e.Field(tc.key); !ok || v != tc.value {
				t.Errorf("Field(%s) = %q, %v after Set", tc.key, v, ok)
			}
		})
	}
}

func TestAppendImages(t *testing.T) {
	t.Parallel()
	msgs := golden.ErrorLines(t, "testdata/append-images.golden", 1)
	agent := NewImage{Name: "shop/agent", NewTag: "2.0@" + newDigest}
	web := NewImage{Name: "shop/web", NewName: "mirror/web", NewTag: "1@" + newDigest}
	for _, tc := range []struct {
		name, in string
		add      []NewImage
		want     string
		bad      bool // an error: its message in testdata/append-images.golden
	}{
		{
			name: "no images key, indented like resources",
			in:   "resources:\n    - ../../base\n", add: []NewImage{agent},
			want: "resources:\n    - ../../base\nimages:\n    - name: shop/agent\n      newTag: \"2.0@" + newDigest + "\"\n",
		},
		{
			name: "no images key, compact resources",
			in:   "resources:\n- ../../base\n", add: []NewImage{agent, web},
			want: "resources:\n- ../../base\nimages:\n- name: shop/agent\n  newTag: \"2.0@" + newDigest + "\"\n- name: shop/web\n  newName: mirror/web\n  newTag: \"1@" + newDigest + "\"\n",
		},
		{
			name: "no images key, no trailing newline",
			in:   "resources: [../../base]", add: []NewImage{agent},
			want: "resources: [../../base]\nimages:\n  - name: shop/agent\n    newTag: \"2.0@" + newDigest + "\"\n",
		},
		{
			name: "after the last entry, before the comments of the next key",
			in:   "images:\n  # identity\n  - name: shop/web\n    newTag: \"1\"\n\n# Replicas.\nreplicas:\n  - name: web\n    count: 2\n", add: []NewImage{agent},
			want: "images:\n  # identity\n  - name: shop/web\n    newTag: \"1\"\n  - name: shop/agent\n    newTag: \"2.0@" + newDigest + "\"\n\n# Replicas.\nreplicas:\n  - name: web\n    count: 2\n",
		},
		{
			name: "images last, trailing blank lines",
			in:   "images:\n- name: shop/web\n  newTag: \"1\"\n\n\n", add: []NewImage{agent},
			want: "images:\n- name: shop/web\n  newTag: \"1\"\n- name: shop/agent\n  newTag: \"2.0@" + newDigest + "\"\n\n\n",
		},
		{
			name: "nothing to add",
			in:   "images: [{name: x}]\n",
			want: "images: [{name: x}]\n",
		},
		{
			name: "flow images",
			in:   "images: [{name: x, newTag: v1}]\n", add: []NewImage{agent},
			bad: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := ParseKustomization("k.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			err = k.AppendImages(tc.add)
			var out []byte
			if err == nil {
				out, err = k.Bytes()
			}
			if tc.bad {
				var ie *exitcode.InvalidInput
				if !errors.As(err, &ie) || ie.File != "k.yaml" {
					t.Fatalf("error %v, want invalid input naming k.yaml", err)
				}
				msgs(tc.name, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tc.want)
			}
			for _, a := range tc.add {
				e := k.Image(a.Name)
				if e == nil {
					t.Fatalf("the appended %s is not found", a.Name)
				}
				if v, _ := e.Field("newTag"); v != a.NewTag {
					t.Errorf("%s newTag %q, want %q", a.Name, v, a.NewTag)
				}
			}
		})
	}
}

func TestAppendImagesTwiceWithoutImages(t *testing.T) {
	t.Parallel()
	k, err := ParseKustomization("k.yaml", []byte("resources:\n- base\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.AppendImages([]NewImage{{Name: "a", NewTag: "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := k.AppendImages([]NewImage{{Name: "b", NewTag: "1"}}); err == nil {
		t.Fatal("a second AppendImages after adding images: was not refused")
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	t.Run("no edit returns the text", func(t *testing.T) {
		in := "a: 1 # c\n---\nb: [2]\n"
		f, err := Parse("f.yaml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.Bytes()
		if err != nil || string(out) != in || f.Edited() {
			t.Fatalf("%q, %v, edited %v", out, err, f.Edited())
		}
	})
	t.Run("overlapping edits", func(t *testing.T) {
		f, err := Parse("f.yaml", []byte("a: x\n"))
		if err != nil {
			t.Fatal(err)
		}
		n := f.Documents()[0].Content[0].Content[1]
		if err := f.Replace(n, "x"); err != nil {
			t.Fatal(err)
		}
		n.Value = "x" // a second edit of the same text
		if err := f.Replace(n, "y"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Bytes(); !errors.Is(err, errOverlap) || !strings.HasPrefix(err.Error(), "f.yaml: ") {
			t.Fatalf("error %v, want errOverlap naming f.yaml", err)
		}
	})
	for _, tc := range []struct{ name, in, value string }{
		{"plain value becomes a mapping", "a: x\n", "b: c"},
		{"plain value becomes a comment", "a: x\n", "# y"},
		{"double quote closed early", "a: \"x\"\n", `y" z`},
		{"single quote closed early", "a: 'x'\n", `y' z`},
		{"a new document", "a: x\n", "y\n---\nb: c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("f.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Replace(f.Documents()[0].Content[0].Content[1], tc.value); err != nil {
				t.Fatal(err)
			}
			out, err := f.Bytes()
			var nc *NotCleanError
			if !errors.As(err, &nc) || nc.File != "f.yaml" {
				t.Fatalf("Bytes = %q, %v; want a *NotCleanError for f.yaml", out, err)
			}
		})
	}
}

func TestContainerImages(t *testing.T) {
	t.Parallel()
	in := `# web
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, annotations: {note: "café ☕ naïve"}}
spec:
  template:
    spec:
      initContainers:
      - {name: "wéb", image: 'shop/migrate:3'}  # ünïcode
      containers:
      - name: web
        image: "shop/web:1.0"   # the app
      - name: bad
        image: {not: scalar}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: job
              image: shop/job
`
	f, err := Parse("m.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	imgs := f.ContainerImages()
	want := []struct {
		doc        int
		path, From string
	}{
		{0, "spec.template.spec.initContainers[0].image", "shop/migrate:3"},
		{0, "spec.template.spec.containers[0].image", "shop/web:1.0"},
		{1, "spec.jobTemplate.spec.template.spec.containers[0].image", "shop/job"},
	}
	if len(imgs) != len(want) {
		t.Fatalf("%d images, want %d: %+v", len(imgs), len(want), imgs)
	}
	for i, w := range want {
		if imgs[i].Document != w.doc || imgs[i].Path != w.path || imgs[i].Node.Value != w.From {
			t.Errorf("image %d: %d %s %q, want %d %s %q", i, imgs[i].Document, imgs[i].Path, imgs[i].Node.Value, w.doc, w.path, w.From)
		}
		if err := f.Replace(imgs[i].Node, w.From+"@"+newDigest); err != nil {
			t.Fatal(err)
		}
	}
	out, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("shop/migrate:3'", "shop/migrate:3@"+newDigest+"'", `shop/web:1.0"`, "shop/web:1.0@"+newDigest+`"`, "image: shop/job", "image: shop/job@"+newDigest)
	if string(out) != r.Replace(in) {
		t.Fatalf("got:\n%s\nwant:\n%s", out, r.Replace(in))
	}
}

func TestPatchImages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, patch string
		want        []string
	}{
		{"strategic merge", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: side\n        image: tools/sidecar:v1\n", []string{"tools/sidecar:v1"}},
		{"json 6902 image field", "- op: replace\n  path: /spec/template/spec/containers/0/image\n  value: shop/web:2\n", []string{"shop/web:2"}},
		{"json 6902 added container", "- op: add\n  path: /spec/template/spec/containers/-\n  value: {name: side, image: tools/sidecar}\n", []string{"tools/sidecar"}},
		{"json 6902 container list", "- op: add\n  path: /spec/template/spec/initContainers\n  value:\n  - {name: a, image: a/a}\n  - {name: b, image: b/b}\n", []string{"a/a", "b/b"}},
		// Found by both walks: callers use the list as a set.
		{"json 6902 pod spec", "- op: replace\n  path: /spec/template/spec\n  value: {containers: [{name: c, image: c/c}]}\n", []string{"c/c", "c/c"}},
		{"several documents", "spec: {containers: [{image: a}]}\n---\nspec: {containers: [{image: b}]}\n", []string{"a", "b"}},
		{"not yaml", "{[", nil},
		{"no containers", "- op: remove\n  path: /spec/replicas\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PatchImages([]byte(tc.patch))
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPatches(t *testing.T) {
	t.Parallel()
	k, err := ParseKustomization("k.yaml", []byte("patchesStrategicMerge:\n- smp.yaml\n- |\n  kind: X\npatches:\n- path: p.yaml\n- patch: |-\n    - op: remove\n- target: {kind: X}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := k.Patches()
	want := []Patch{{Value: "p.yaml"}, {Value: "- op: remove", Inline: true}, {Value: "smp.yaml"}, {Value: "kind: X\n", Inline: true}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("patch %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSplitImage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ image, name, tag string }{
		{"nginx", "nginx", ""},
		{"nginx:1.27", "nginx", "1.27"},
		{"localhost:5000/shop/web", "localhost:5000/shop/web", ""},
		{"localhost:5000/shop/web:1.0", "localhost:5000/shop/web", "1.0"},
		{"ghcr.io/a/b:v1@" + newDigest, "ghcr.io/a/b", "v1"},
		{"ghcr.io/a/b@" + newDigest, "ghcr.io/a/b", ""},
	} {
		name, tag := SplitImage(tc.image)
		if name != tc.name || tag != tc.tag {
			t.Errorf("SplitImage(%q) = %q, %q; want %q, %q", tc.image, name, tag, tc.name, tc.tag)
		}
		if ImageName(tc.image) != tc.name {
			t.Errorf("ImageName(%q) = %q, want %q", tc.image, ImageName(tc.image), tc.name)
		}
		if !strings.Contains(tc.image, "@") && JoinImage(name, tag) != tc.image {
			t.Errorf("JoinImage(%q, %q) = %q, want %q", name, tag, JoinImage(name, tag), tc.image)
		}
	}
}
