package chartindex

import (
	"strings"
	"testing"
)

// FuzzParse feeds Parse what a chart repository's server may answer for
// index.yaml (YAML or JSON, anything): never a panic, and an index it
// accepts holds only what Parse promises (apiVersion v1, every entry
// named as its chart).
func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.2.3\n    urls: [web-1.2.3.tgz]\n    digest: abc\n"))
	f.Add([]byte(`{"apiVersion":"v1","entries":{"web":[{"name":"web","version":"1.2.3","urls":["web-1.2.3.tgz"]}]}}`))
	f.Add([]byte("apiVersion: v1\nentries:\n  web:\n  - name: other\n"))
	f.Add([]byte("apiVersion: v1\nentries: {}\n"))
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\napiVersion: v1\nentries: {}\n"))
	f.Add([]byte("\xef\xbb\xbf{\"apiVersion\": \"v1\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := Parse(data)
		if err != nil {
			if idx != nil {
				t.Fatalf("an index with an error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "index.yaml") {
				t.Fatalf("the error does not name index.yaml: %v", err)
			}
			return
		}
		if idx.APIVersion != "v1" || idx.Entries == nil {
			t.Fatalf("accepted apiVersion %q, entries %v", idx.APIVersion, idx.Entries)
		}
		for n, vs := range idx.Entries {
			for _, v := range vs {
				if v.Name != n {
					t.Fatalf("accepted entry %q under %q", v.Name, n)
				}
			}
		}
	})
}
