package gate

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseControllers: any controller file (a change's untrusted input)
// is read or refused as invalid, never a panic; every object read is a
// controller kind.
func FuzzParseControllers(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(exampleRepo, "clusters", "*", "*.yaml"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(multiSource))
	f.Add([]byte("---\n---\nkind: Application\n"))
	f.Add([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"ApplicationSet"}`))
	f.Add([]byte(appSet))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := parseControllers("clusters/x.yaml", data)
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.kind != "Application" && c.kind != "ApplicationSet" && c.kind != "AppProject" && c.kind != "Kustomization" {
				t.Fatalf("kind %q", c.kind)
			}
			if c.kind == "ApplicationSet" { // expanded or refused, never a panic
				_, _ = ApplicationSetApplications(c.obj, []string{"apps", "apps/a"}, nil)
			}
		}
	})
}
