package v1alpha1_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// allowedImports are the only non-standard packages api/v1alpha1 may import:
// any client must be able to use the types without client-go or throughline.
var allowedImports = []string{
	"k8s.io/apimachinery/pkg/apis/meta/v1",
	"k8s.io/apimachinery/pkg/runtime",
	"k8s.io/apimachinery/pkg/runtime/schema",
}

// TestLeafPackage checks that the package (without its tests) imports the
// standard library and allowedImports only.
func TestLeafPackage(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.GoFiles) == 0 {
		t.Fatal("no Go files found")
	}
	for _, imp := range pkg.Imports {
		if slices.Contains(allowedImports, imp) || isStandard(imp) {
			continue
		}
		t.Errorf("api/v1alpha1 imports %s: the API package is a leaf (standard library and %s only)", imp, strings.Join(allowedImports, ", "))
	}
}

// isStandard reports whether imp is a standard-library package (no dot in
// its first path element).
func isStandard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}
