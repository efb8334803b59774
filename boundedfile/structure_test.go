package boundedfile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// direct are the files that may open local files themselves, and why:
// every other read of a file a flag, a Secret or a cache names goes
// through Read (TestOnlyBoundedReads).
var direct = map[string]string{
	"boundedfile/boundedfile.go": "the reader itself",
	"render/fs.go":               "the confined reader of the repository (symlinks, size, YAML limits)",
	"render/replay_unix.go":      "the confined reader's replay of a probe (readFile's checks, without following links)",
	"render/escape.go":           "the sandbox's probe of what the render child may open",
	"render/worker_linux.go":     "/proc/self/status, the kernel's",
	"gitrepo/gitrepo.go":         "creates files (O_EXCL), reads none",
}

// testSupport are the packages only tests use (fixtures, servers, golden
// files): they read what tests made, directly. No other code may import
// them (TestOnlyBoundedReads), so a read there never runs in a binary.
var testSupport = map[string]bool{
	"internal/benchfixture":   true,
	"internal/chartfixture":   true,
	"internal/dashboardview":  true,
	"internal/gittest":        true,
	"internal/golden":         true,
	"internal/hostile":        true,
	"internal/signedevidence": true,
	"internal/spantest":       true,
	"internal/sshkey":         true,
	"internal/testenv":        true,
	"chainview/chainfixture":  true,
}

const module = "github.com/throughline-dev/throughline/"

// opens are the functions that open a local file by name, by import path.
var opens = map[string]map[string]bool{
	"os":                    {"ReadFile": true, "Open": true, "OpenFile": true, "DirFS": true, "OpenRoot": true, "OpenInRoot": true},
	"io/ioutil":             {"ReadFile": true},
	"syscall":               {"Open": true, "Openat": true},
	"golang.org/x/sys/unix": {"Open": true, "Openat": true, "Openat2": true},
}

// directReads lists where f opens a local file by name, whatever the
// import is called: os.ReadFile, an alias of os, a dot import, ioutil, the
// system calls; each as "position: what".
func directReads(fset *token.FileSet, f *ast.File) []string {
	var out []string
	names := map[string]string{} // local name -> import path
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil || opens[p] == nil {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		switch name {
		case "_":
			continue
		case ".":
			out = append(out, fset.Position(im.Pos()).String()+": dot import of "+p+" (its open functions would be unqualified)")
			continue
		}
		names[name] = p
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Obj != nil { // x.Obj: a local variable, not the package
			return true
		}
		if p, ok := names[x.Name]; ok && opens[p][sel.Sel.Name] {
			out = append(out, fset.Position(sel.Pos()).String()+": "+p+"."+sel.Sel.Name)
		}
		return true
	})
	return out
}

// TestOnlyBoundedReads is the caller that tries to bypass the one reader:
// a package that opens a local file itself (os.ReadFile, os.Open,
// os.OpenFile, os.DirFS, ioutil, the open system calls, under any import
// name), outside the files above, fails here, and so does code that
// imports a test-support package. (A new direct read needs a reason
// above, in review, or boundedfile.Read.)
func TestOnlyBoundedReads(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var bad []string
	seen := 0
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, ".."+string(filepath.Separator)))
		if d.IsDir() && p != ".." && (d.Name() == "testdata" || d.Name() == "e2e" || d.Name() == "hack" ||
			d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || testSupport[rel]) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		seen++
		// Comments: a //go:build e2e file is in the walk too.
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if ip, err := strconv.Unquote(im.Path.Value); err == nil && testSupport[strings.TrimPrefix(ip, module)] {
				bad = append(bad, fset.Position(im.Pos()).String()+": imports "+ip+", a test-support package whose reads are not checked")
			}
		}
		if _, ok := direct[rel]; ok {
			return nil
		}
		for _, r := range directReads(fset, f) {
			bad = append(bad, r+" outside boundedfile: read local files with boundedfile.Read (or the confined reader for the repository)")
		}
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
	for rel := range testSupport {
		if fi, err := os.Stat(filepath.Join("..", rel)); err != nil || !fi.IsDir() {
			t.Errorf("test-support package %s is not there: take it off the list", rel)
		}
	}
	for rel := range direct {
		if _, err := os.Stat(filepath.Join("..", rel)); err != nil {
			t.Errorf("direct reader %s is not there: take it off the list", rel)
		}
	}
}

// TestDirectReadsFound is the guard attacked: each way a contributor could
// open a file without boundedfile is reported.
func TestDirectReadsFound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      int
	}{
		{"os.ReadFile", `import "os"; func f() { os.ReadFile("x") }`, 1},
		{"aliased os", `import xos "os"; func f() { xos.Open("x") }`, 1},
		{"method value", `import "os"; var read = os.ReadFile`, 1},
		{"dot import", `import . "os"; func f() { ReadFile("x") }`, 1},
		{"ioutil", `import "io/ioutil"; func f() { ioutil.ReadFile("x") }`, 1},
		{"aliased ioutil", `import io "io/ioutil"; func f() { io.ReadFile("x") }`, 1},
		{"os.DirFS", `import ("io/fs"; "os"); func f() { fs.ReadFile(os.DirFS("/"), "x") }`, 1},
		{"os.OpenRoot", `import "os"; func f() { os.OpenRoot("/") }`, 1},
		{"syscall.Open", `import "syscall"; func f() { syscall.Open("x", 0, 0) }`, 1},
		{"unix.Openat", `import "golang.org/x/sys/unix"; func f() { unix.Openat(0, "x", 0, 0) }`, 1},
		{"aliased unix", `import sys "golang.org/x/sys/unix"; func f() { sys.Open("x", 0, 0) }`, 1},
		{"two reads", `import "os"; func f() { os.ReadFile("x"); os.OpenFile("y", 0, 0) }`, 2},
		// Not opens of a file by name: never reported.
		{"os.ReadDir and os.Stat", `import "os"; func f() { os.ReadDir("x"); os.Stat("x") }`, 0},
		{"a variable named os", `import "strings"; func f() { var os strings.Builder; os.Reset() }`, 0},
		{"blank import", `import _ "os"`, 0},
		{"boundedfile", `import "github.com/throughline-dev/throughline/boundedfile"; func f() { boundedfile.Read("x", 1) }`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x; "+tt.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := directReads(fset, f); len(got) != tt.want {
				t.Errorf("got %d %v, want %d", len(got), got, tt.want)
			}
		})
	}
}
