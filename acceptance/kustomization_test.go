package acceptance

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/internal/golden"
)

// TestAddResourceEditsOneLine: `render --write-acceptance` lists the
// Acceptance in a hand-formatted kustomization.yaml by editing only where
// it adds the entry (issue 22: it re-encoded the whole file, dropping the
// author's indentation, quotes, flow style and blank lines). Each
// testdata/kustomization/<case>.in.yaml is edited to <case>.golden.yaml;
// for a block list the only difference is the one added line, and a second
// edit changes nothing.
func TestAddResourceEditsOneLine(t *testing.T) {
	t.Parallel()
	ins, err := filepath.Glob("testdata/kustomization/*.in.yaml")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := addResource(data, "kustomization.yaml", File)
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, "testdata/kustomization/"+name+".golden.yaml", out)
			again, err := addResource(out, "kustomization.yaml", File)
			if err != nil || string(again) != string(out) {
				t.Fatalf("a second edit changed it (err %v):\n%s", err, again)
			}
			rn, err := kyaml.Parse(string(out))
			if err != nil {
				t.Fatalf("the edit does not parse: %v\n%s", err, out)
			}
			list, err := rn.Pipe(kyaml.Lookup("resources"))
			if err != nil || list == nil {
				t.Fatalf("no resources after the edit: %v\n%s", err, out)
			}
			var got []string
			for _, e := range list.YNode().Content {
				got = append(got, e.Value)
			}
			if got[len(got)-1] != File {
				t.Fatalf("resources %v, want %s last", got, File)
			}
			if name == "block" {
				inLines, outLines := strings.Split(string(data), "\n"), strings.Split(string(out), "\n")
				i := slices.Index(outLines, "    - "+File)
				if i < 0 || !slices.Equal(slices.Delete(slices.Clone(outLines), i, i+1), inLines) {
					t.Fatalf("more than the one line changed:\n%s", out)
				}
			}
		})
	}
}

// FuzzAddResource: whatever the kustomization, the edit never panics, and
// an edit it makes parses and lists the resource.
func FuzzAddResource(f *testing.F) {
	ins, _ := filepath.Glob("testdata/kustomization/*.in.yaml")
	for _, in := range ins {
		if data, err := os.ReadFile(in); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("resources: [a,\n b ,\n]\n"))
	f.Add([]byte("resources:\n- |\n  x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := addResource(data, "kustomization.yaml", File)
		if err != nil {
			return
		}
		rn, err := kyaml.Parse(string(out))
		if err != nil {
			t.Fatalf("the edit does not parse: %v\n%q -> %q", err, data, out)
		}
		list, err := rn.Pipe(kyaml.Lookup("resources"))
		if err != nil || list == nil {
			t.Fatalf("no resources: %v\n%q -> %q", err, data, out)
		}
		for _, e := range list.YNode().Content {
			if e.Value == File {
				return
			}
		}
		t.Fatalf("%s not listed:\n%q -> %q", File, data, out)
	})
}
