package ledger

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyLedgerReadsHistory: the ledger is the one reader of records
// through Git history, and of runtime evidence (signature checked). Any other package calling FileHistory (the history
// of a file) answers the ledger's question a second way; the read-only
// packages (the web view, delivery metrics) and the gate never import
// promote, the package that writes records.
func TestOnlyLedgerReadsHistory(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var calls, unsigned []string
	imports := map[string][]string{} // package dir -> throughline imports
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "e2e" || strings.HasPrefix(d.Name(), ".")) && p != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		for _, im := range f.Imports {
			v, _ := strconv.Unquote(im.Path.Value)
			imports[dir] = append(imports[dir], v)
		}
		f, err = parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if sel.Sel.Name == "FileHistory" && dir != "../gitrepo" && dir != "../ledger" {
				calls = append(calls, fset.Position(sel.Pos()).String()+" reads a file's history outside the ledger: read records through ledger.Reader")
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "evidence" && sel.Sel.Name == "Parse" {
				unsigned = append(unsigned, fset.Position(sel.Pos()).String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 20 {
		t.Fatalf("read %d packages: the walk did not find the module", len(imports))
	}
	for _, c := range calls {
		t.Error(c)
	}
	// Runtime evidence is read from Git only with its signature checked
	// before it is parsed: ledger.ReadEvidence (evidence.Open). A caller
	// of evidence.Parse would take the file's word for it.
	for _, c := range unsigned {
		t.Errorf("%s parses runtime evidence without its signature: read it through ledger.ReadEvidence", c)
	}
	for _, dir := range []string{"../chainview", "../delivery", "../ledger", "../gate"} {
		for _, im := range imports[dir] {
			if im == "github.com/throughline-dev/throughline/promote" {
				t.Errorf("%s imports promote: a reader of the ledger (and the gate that judges the writes) never imports the package that writes records", dir)
			}
		}
	}
}
