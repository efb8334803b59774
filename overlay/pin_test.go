package overlay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

// tree writes files under a new directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// dump is every file under root, sorted, as the golden files hold them.
func dump(t *testing.T, root string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, n)
		b.WriteString("--- " + filepath.ToSlash(rel) + "\n" + string(data))
	}
	return b.String()
}

const (
	dig1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	dig2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

const baseDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      initContainers:
        - name: migrate
          image: example.com/shop/migrate:3.1@` + dig1 + `
      containers:
        - name: web
          image: example.com/shop/web:1.0   # the app
        - name: agent
          image: example.com/shop/agent
`

// TestPin: the planning and the edit of pin without a registry: the
// digests are handed in as the caller resolved them.
func TestPin(t *testing.T) {
	t.Parallel()
	resolved := map[string]string{"example.com/shop/web:1.0": dig1, "example.com/shop/agent": dig2}
	for _, tc := range []struct {
		name  string
		files map[string]string
		refs  []string
	}{
		{"kustomization", map[string]string{
			"base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
			"base/deployment.yaml":    baseDeployment,
			"app/kustomization.yaml":  "# Staging.\nresources:\n  - ../base\nimages:\n  - name: example.com/shop/web\n    newTag: \"1.0\"   # kept\n",
		}, []string{"example.com/shop/web:1.0", "example.com/shop/agent"}},
		{"manifests", map[string]string{
			"app/deployment.yaml": baseDeployment,
			"app/pod.json":        `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "example.com/shop/agent"}]}}` + "\n",
			"app/README.md":       "not a manifest\n",
		}, []string{"example.com/shop/web:1.0", "example.com/shop/agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			root := tree(t, tc.files)
			opts := render.Options{Root: root, Path: filepath.Join(root, "app")}
			p, err := PlanPin(ctx, opts, PinPolicy{})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Refs(); strings.Join(got, " ") != strings.Join(tc.refs, " ") {
				t.Fatalf("Refs = %v, want %v", got, tc.refs)
			}
			if err := p.Verify(ctx); err == nil {
				t.Fatal("Verify before Apply: nil, want the unpinned images")
			}
			if err := p.Conflicts(); err != nil {
				t.Fatal(err)
			}
			changes, err := p.Apply(resolved)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Verify(ctx); err != nil {
				t.Fatal(err)
			}
			goldenText(t, "pin/"+tc.name+".golden", "--- changes\n"+strings.Join(changes, "\n")+"\n"+dump(t, root))
		})
	}
}

// TestPinRefusals: one name with two tags cannot be one images: entry;
// a malformed digest and a flow-style images: are invalid input.
func TestPinRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	twoTags := tree(t, map[string]string{
		"base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"base/deployment.yaml":    baseDeployment,
		"app/kustomization.yaml":  "resources:\n  - ../base\n  - pod.yaml\n",
		"app/pod.yaml":            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    image: example.com/shop/web:2.0\n",
	})
	p, err := PlanPin(ctx, render.Options{Root: twoTags, Path: filepath.Join(twoTags, "app")}, PinPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	// The tags and the digest problem are named in the messages only:
	// testdata/pin-refusals.golden.
	msgs := golden.ErrorLines(t, "testdata/pin-refusals.golden", 3)
	var r *exitcode.Refusal
	var in *exitcode.InvalidInput
	if err := p.Conflicts(); !errors.As(err, &r) || r.Rule != RuleUnpinned || exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("two tags: %v", err)
	} else {
		msgs("two tags", err)
	}
	bad := tree(t, map[string]string{"app/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    image: x/y:1@sha256:abc\n"})
	if _, err := PlanPin(ctx, render.Options{Root: bad, Path: filepath.Join(bad, "app")}, PinPolicy{}); !errors.As(err, &in) || in.File != "app" {
		t.Fatalf("malformed digest: %v", err)
	} else {
		msgs("malformed digest", err)
	}
	flow := tree(t, map[string]string{
		"base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"base/deployment.yaml":    baseDeployment,
		"app/kustomization.yaml":  "resources: [../base]\nimages: [{name: x, newTag: v1}]\n",
	})
	p, err = PlanPin(ctx, render.Options{Root: flow, Path: filepath.Join(flow, "app")}, PinPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	before := dump(t, flow)
	if _, err := p.Apply(map[string]string{"example.com/shop/web:1.0": dig1, "example.com/shop/agent": dig2}); !errors.As(err, &in) ||
		in.File != "app/kustomization.yaml" {
		t.Fatalf("flow images: %v", err)
	} else {
		msgs("flow images", err)
	}
	if dump(t, flow) != before {
		t.Fatal("a refused pin wrote")
	}
}

func TestParseImageSet(t *testing.T) {
	t.Parallel()
	hex := strings.Repeat("ab", 32)
	msgs := golden.ErrorLines(t, "testdata/parse-image-set.golden", 9)
	for _, tc := range []struct {
		in   string
		want ImageSet
		bad  bool // an error: its message in testdata/parse-image-set.golden
	}{
		{in: "example.com/shop/web=1.2@sha256:" + hex, want: ImageSet{Name: "example.com/shop/web", Tag: "1.2", Digest: "sha256:" + hex}},
		{in: "example.com/shop/web=127.0.0.1:5000/web:1.2@sha256:" + hex,
			want: ImageSet{Name: "example.com/shop/web", NewName: "127.0.0.1:5000/web", Tag: "1.2", Digest: "sha256:" + hex}},
		{in: "example.com/shop/web=example.com/shop/web:1.2@sha256:" + hex, want: ImageSet{Name: "example.com/shop/web", Tag: "1.2", Digest: "sha256:" + hex}},
		{in: "example.com/shop/web", bad: true},
		{in: "example.com/shop/web=1.2", bad: true},
		{in: "example.com/shop/web=@sha256:" + hex, bad: true},
		{in: "example.com/shop/web=1.2@sha256:abab", bad: true},
		{in: "example.com/shop/web=1.2@sha512:" + strings.Repeat("ab", 64), bad: true},
		{in: "example.com/shop/web=1.2@sha256:" + strings.Repeat("AB", 32), bad: true},
		{in: "example.com/shop/web:1.0=1.2@sha256:" + hex, bad: true},
		{in: "example.com/shop/web=Example.com/UPPER:1.2@sha256:" + hex, bad: true},
		{in: "example.com/shop/web=1/2@sha256:" + hex, bad: true},
	} {
		got, err := ParseImageSet(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseImageSet(%q) = %+v; want an error", tc.in, got)
				continue
			}
			msgs(strings.ReplaceAll(tc.in, hex, "HEX"), errors.New(strings.ReplaceAll(err.Error(), hex, "HEX")))
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseImageSet(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if again, err := ParseImageSet(got.String()); err != nil || again != got {
			t.Errorf("ParseImageSet(%q.String()) = %+v, %v", tc.in, again, err)
		}
	}
}

// goldenText compares got with testdata/<name> (internal/golden).
func goldenText(t *testing.T, name, got string) {
	t.Helper()
	golden.Compare(t, "testdata/"+name, []byte(got))
}
