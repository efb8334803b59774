package environment

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
)

func TestSourceValidation(t *testing.T) {
	tests := []struct {
		name   string
		source *v1alpha1.SourcePolicy
		field  string // "": valid
	}{
		{"git", nil, ""},
		{"oci", &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "127.0.0.1:5000/gitops/production", Tag: "production"}}, ""},
		{"empty source", &v1alpha1.SourcePolicy{}, "environments.production.source"},
		{"scheme", &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "oci://registry.example/gitops", Tag: "prod"}},
			"environments.production.source.oci.repository"},
		{"tag in the repository", &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "registry.example/gitops:prod", Tag: "prod"}},
			"environments.production.source.oci.repository"},
		{"digest in the repository", &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{
			Repository: "registry.example/gitops@sha256:" + strings.Repeat("a", 64), Tag: "prod"}}, "environments.production.source.oci.repository"},
		{"upper-case repository", &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "registry.example/GitOps", Tag: "prod"}},
			"environments.production.source.oci.repository"},
		{"no tag", &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "registry.example/gitops"}},
			"environments.production.source.oci.tag"},
		{"digest as tag", &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "registry.example/gitops", Tag: "sha256:" + strings.Repeat("a", 64)}},
			"environments.production.source.oci.tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := example()
			e := p.Environments["production"]
			e.Source = tt.source
			p.Environments["production"] = e
			r, err := New(file, p)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				want := SourceGit
				if tt.source != nil {
					want = SourceOCI
				}
				if got := r.SourceKindOf("production"); got != want {
					t.Errorf("source kind %s, want %s", got, want)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if exitcode.Code(err) != exitcode.Invalid || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("exit %d, error %q: want exit 4 naming %s and %s", exitcode.Code(err), err, file, tt.field)
			}
		})
	}
	var empty *Registry
	if empty.SourceKindOf("staging") != SourceGit {
		t.Error("an empty registry is not Git")
	}
}
