package remotelimit_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Import paths the boundary check knows.
const (
	ggcrRemote    = "github.com/google/go-containerregistry/pkg/v1/remote"
	ggcrTransport = "github.com/google/go-containerregistry/pkg/v1/remote/transport"
	netHTTP       = "net/http"
	thisPackage   = "github.com/throughline-dev/throughline/remotelimit"
)

// notShipped are the module's directories of non-test code that is not
// part of a shipped binary: test harnesses and release tooling.
var notShipped = []string{
	"e2e/",                   // end-to-end suites
	"hack/",                  // release and development tools
	"internal/testenv/",      // test environment (kind, registries, Argo CD)
	"internal/chartfixture/", // chart fixtures of tests
	"internal/ociimage/",     // assembles and pushes the release image (hack/image)
	"trust/trusttest/",       // trust's test world
}

// ownLimits are http.Clients that bound what they read themselves, each
// for a reason (they talk to no registry or chart source).
var ownLimits = map[string]string{
	"forge/forge.go":       "forge API answers, read through io.LimitReader (1 MiB)",
	"runtimecheck/http.go": "runtime check bodies, read through io.LimitReader (MaxBody)",
}

// remoteIO are the go-containerregistry remote functions that talk to a
// registry.
var remoteIO = map[string]bool{
	"Get": true, "Head": true, "Image": true, "Index": true, "Layer": true, "Referrers": true,
	"List": true, "ListWithContext": true, "Catalog": true, "CatalogPage": true, "NewPuller": true,
	"NewPusher": true, "Put": true, "Write": true, "WriteIndex": true, "WriteLayer": true,
	"MultiWrite": true, "Tag": true, "Delete": true,
}

// TestRemoteReadsBounded scans the module's non-test code: every transport
// handed to go-containerregistry and every http.Client comes from
// remotelimit.New; the http package's default client is not used; a
// package that talks to a registry hands go-containerregistry a bounded
// transport somewhere.
func TestRemoteReadsBounded(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	for _, f := range scanModule(t, root) {
		t.Error(f)
	}
}

// TestBoundaryCheckRefusesBypasses: what a careless or hostile contributor
// would write is found.
func TestBoundaryCheckRefusesBypasses(t *testing.T) {
	const head = `package p
import (
	"context"
	"net/http"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/throughline-dev/throughline/remotelimit"
)
var _ = context.Background
var _ = transport.PullScope
var _ = remotelimit.New
`
	for _, tt := range []struct {
		name, src string
		bad       bool
	}{
		{"bounded transport", `func f() { remote.Get(nil, remote.WithTransport(remotelimit.New(nil, nil))) }`, false},
		{"default transport", `func f() { remote.Get(nil, remote.WithTransport(http.DefaultTransport)) }`, true},
		{"a variable", `func f(rt http.RoundTripper) { remote.Get(nil, remote.WithTransport(rt)) }`, true},
		{"no transport at all", `func f() { remote.Get(nil) }`, true},
		{"a puller without transport", `func f() { remote.NewPuller() }`, true},
		{"the option as a value", `var wt = remote.WithTransport
func f() { remote.Get(nil, wt(http.DefaultTransport)) }`, true},
		{"auth transport over a bounded base", `func f(ctx context.Context) {
	t, _ := transport.NewWithContext(ctx, nil, nil, remotelimit.New(nil, nil), nil)
	remote.Get(nil, remote.WithTransport(t))
}`, false},
		{"auth transport over an unbounded base", `func f(ctx context.Context, base http.RoundTripper) {
	t, _ := transport.NewWithContext(ctx, nil, nil, base, nil)
	remote.Get(nil, remote.WithTransport(t))
}`, true},
		{"http.Get", `func f() { http.Get("https://x") }`, true},
		{"http.Post", `func f() { http.Post("https://x", "", nil) }`, true},
		{"default client", `func f() { http.DefaultClient.Do(nil) }`, true},
		{"a client without transport", `func f() { _ = &http.Client{} }`, true},
		{"a client with its own transport", `func f() { _ = &http.Client{Transport: http.DefaultTransport} }`, true},
		{"a bounded client", `func f() { _ = &http.Client{Transport: remotelimit.New(nil, nil)} }`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p/p.go", head+tt.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := checkPackage(fset, []*ast.File{f}, "p/")
			if (len(got) > 0) != tt.bad {
				t.Errorf("findings %q, want bad=%v", got, tt.bad)
			}
		})
	}
	t.Run("aliased import", func(t *testing.T) {
		src := `package p
import (
	h "net/http"
	r "github.com/google/go-containerregistry/pkg/v1/remote"
)
func f() { r.Get(nil, r.WithTransport(h.DefaultTransport)) }`
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "p/p.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkPackage(fset, []*ast.File{f}, "p/"); len(got) == 0 {
			t.Error("an aliased import hides the bypass")
		}
	})
}

// scanModule checks every package directory of root's non-test code.
func scanModule(t *testing.T, root string) []string {
	t.Helper()
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			for _, skip := range notShipped {
				if rel+"/" == skip {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			byDir[filepath.Dir(rel)] = append(byDir[filepath.Dir(rel)], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var findings []string
	for dir, files := range byDir {
		fset := token.NewFileSet()
		var parsed []*ast.File
		for _, rel := range files {
			f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			parsed = append(parsed, f)
		}
		findings = append(findings, checkPackage(fset, parsed, dir+"/")...)
	}
	sort.Strings(findings)
	return findings
}

// checkPackage returns the findings of one package's files.
func checkPackage(fset *token.FileSet, files []*ast.File, dir string) []string {
	var findings []string
	bounded := false   // a bounded transport is handed to go-containerregistry
	var talks []string // positions of registry calls
	for _, f := range files {
		names := imports(f)
		is := func(e ast.Expr, path, sel string) bool {
			s, ok := e.(*ast.SelectorExpr)
			if !ok {
				return false
			}
			id, ok := s.X.(*ast.Ident)
			return ok && names[id.Name] == path && (sel == "" || s.Sel.Name == sel)
		}
		isLimit := func(e ast.Expr) bool {
			c, ok := e.(*ast.CallExpr)
			return ok && is(c.Fun, thisPackage, "New")
		}
		pos := func(n ast.Node) string {
			p := fset.Position(n.Pos())
			return fmt.Sprintf("%s:%d", rel(dir, p.Filename), p.Line)
		}
		calls := map[*ast.SelectorExpr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok {
					calls[s] = true
				}
			}
			return true
		})
		// Each function: the auth transports it builds over a bounded base.
		for _, decl := range f.Decls {
			authOK := map[string]bool{}
			ast.Inspect(decl, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					for _, r := range n.Rhs {
						c, ok := r.(*ast.CallExpr)
						if !ok || (!is(c.Fun, ggcrTransport, "New") && !is(c.Fun, ggcrTransport, "NewWithContext")) {
							continue
						}
						if base := c.Args[len(c.Args)-2]; isLimit(base) {
							if id, ok := n.Lhs[0].(*ast.Ident); ok {
								authOK[id.Name] = true
							}
						}
					}
				case *ast.CallExpr:
					if s, ok := n.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "RegistryOptions" {
						// trust.Options.RegistryOptions: registry options with
						// a bounded transport (trust's tests check it).
						bounded = true
					}
					switch {
					case is(n.Fun, ggcrRemote, "WithTransport"):
						id, isIdent := n.Args[0].(*ast.Ident)
						if isLimit(n.Args[0]) || (isIdent && authOK[id.Name]) {
							bounded = true
						} else {
							findings = append(findings, pos(n)+": remote.WithTransport without remotelimit.New")
						}
					case is(n.Fun, ggcrTransport, "New"), is(n.Fun, ggcrTransport, "NewWithContext"):
						if !isLimit(n.Args[len(n.Args)-2]) {
							findings = append(findings, pos(n)+": a go-containerregistry auth transport over a base not from remotelimit.New")
						}
					case is(n.Fun, netHTTP, "Get"), is(n.Fun, netHTTP, "Head"), is(n.Fun, netHTTP, "Post"), is(n.Fun, netHTTP, "PostForm"):
						findings = append(findings, pos(n)+": http package-level request (the default client, unbounded)")
					}
					if s, ok := n.Fun.(*ast.SelectorExpr); ok && is(s, ggcrRemote, "") && remoteIO[s.Sel.Name] {
						talks = append(talks, pos(n))
					}
				case *ast.SelectorExpr:
					if is(n, netHTTP, "DefaultClient") {
						findings = append(findings, pos(n)+": http.DefaultClient (unbounded)")
					}
					if is(n, ggcrRemote, "WithTransport") && !calls[n] {
						findings = append(findings, pos(n)+": remote.WithTransport used as a value")
					}
				case *ast.CompositeLit:
					if !is(n.Type, netHTTP, "Client") {
						return true
					}
					if _, ok := ownLimits[rel(dir, fset.Position(n.Pos()).Filename)]; ok {
						return true
					}
					ok := false
					for _, e := range n.Elts {
						if kv, isKV := e.(*ast.KeyValueExpr); isKV {
							if k, isID := kv.Key.(*ast.Ident); isID && k.Name == "Transport" && isLimit(kv.Value) {
								ok = true
							}
						}
					}
					if !ok {
						findings = append(findings, pos(n)+": http.Client whose Transport is not remotelimit.New")
					}
				}
				return true
			})
		}
	}
	if !bounded {
		for _, p := range talks {
			findings = append(findings, p+": talks to a registry, and the package hands go-containerregistry no remotelimit transport")
		}
	}
	return findings
}

// imports maps a file's import names to their paths.
func imports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		n := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			n = im.Name.Name
		}
		m[n] = p
	}
	return m
}

// rel is a file's path relative to the module root.
func rel(dir, file string) string {
	file = filepath.ToSlash(file)
	if i := strings.Index(file, "/"+dir); i >= 0 {
		return file[i+1:]
	}
	return file
}
