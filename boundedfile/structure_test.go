package boundedfile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// direct are the files that may open local files themselves, and why:
// every other read of a file a flag, a Secret or a cache names goes
// through Read (TestOnlyBoundedReads).
var direct = map[string]string{
	"boundedfile/boundedfile.go":             "the reader itself",
	"render/fs.go":                           "the confined reader of the repository (symlinks, size, YAML limits)",
	"render/escape.go":                       "the sandbox's probe of what the render child may open",
	"render/worker_linux.go":                 "/proc/self/status, the kernel's",
	"gitrepo/gitrepo.go":                     "creates files (O_EXCL), reads none",
	"cmp/cache.go":                           "the render cache's own entries, each checked against its sum before use",
	"overlay/pin.go":                         "the app's kustomization and manifests, which the confined render read first",
	"chartsource/pin.go":                     "the app's chart lock file under the repository root",
	"acceptance/write.go":                    "the app's kustomization, which the confined render read first",
	"chainview/chainfixture/chainfixture.go": "a test fixture's repository",
}

// TestOnlyBoundedReads is the caller that tries to bypass the one reader:
// a package that opens a local file with os.ReadFile, os.Open or
// os.OpenFile, outside the files above, fails here. (A new direct read
// needs a reason above, in review, or boundedfile.Read.)
func TestOnlyBoundedReads(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var bad []string
	seen := 0
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != ".." && (d.Name() == "testdata" || d.Name() == "e2e" || d.Name() == "hack" || d.Name() == "internal" ||
			d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		seen++
		rel := filepath.ToSlash(strings.TrimPrefix(p, ".."+string(filepath.Separator)))
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || x.Name != "os" || (sel.Sel.Name != "ReadFile" && sel.Sel.Name != "Open" && sel.Sel.Name != "OpenFile") {
				return true
			}
			if _, ok := direct[rel]; !ok {
				bad = append(bad, fset.Position(sel.Pos()).String()+": os."+sel.Sel.Name+" outside boundedfile: read local files with boundedfile.Read")
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 200 {
		t.Fatalf("read %d files: the walk did not find the module", seen)
	}
	for _, b := range bad {
		t.Error(b)
	}
}
