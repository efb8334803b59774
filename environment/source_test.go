package environment

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/internal/golden"
)

func TestSourceValidation(t *testing.T) {
	t.Parallel()
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
	// Each refusal's field ([...]) in its message: testdata/source-fields.golden.
	msgs := golden.ErrorLines(t, "testdata/source-fields.golden", 0)
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
			wantInvalid(t, err)
			msgs(tt.name+" ["+tt.field+"]", err)
		})
	}
	var empty *Registry
	if empty.SourceKindOf("staging") != SourceGit {
		t.Error("an empty registry is not Git")
	}
}

// TestCheckControllerSource: a controller reading the other kind of source
// than its environment's is refused: its revisions would be read as the
// wrong kind (a SHA-256 commit taken for an artifact digest, or the
// reverse).
func TestCheckControllerSource(t *testing.T) {
	t.Parallel()
	p := example()
	e := p.Environments["staging"]
	e.Source = &v1alpha1.SourcePolicy{OCI: &v1alpha1.OCISourcePolicy{Repository: "registry.example/gitops/staging", Tag: "staging"}}
	p.Environments["staging"] = e
	r, err := New(file, p)
	if err != nil {
		t.Fatal(err)
	}
	ks := func(kind, path string) map[string]any {
		return map[string]any{"kind": "Kustomization", "metadata": map[string]any{"namespace": "flux-system", "name": "checkout"},
			"spec": map[string]any{"path": path, "sourceRef": map[string]any{"kind": kind, "name": "src"}}}
	}
	app := func(repoURL, path string) map[string]any {
		return map[string]any{"kind": "Application", "metadata": map[string]any{"namespace": "argocd", "name": "checkout"},
			"spec": map[string]any{"source": map[string]any{"repoURL": repoURL, "path": path}}}
	}
	msgs := golden.ErrorLines(t, "testdata/source-kinds.golden", 3)
	for _, tc := range []struct {
		name string
		obj  map[string]any
		env  string
		want string // "": accepted
	}{
		{"flux oci staging", ks("OCIRepository", "./apps/checkout/overlays/staging"), "staging", ""},
		{"flux git production", ks("GitRepository", "./apps/checkout/overlays/production"), "production", ""},
		{"argocd oci staging", app("oci://registry.example/gitops/staging", "apps/checkout/overlays/staging"), "staging", ""},
		{"argocd git production", app("https://git.example/gitops.git", "apps/checkout/overlays/production"), "production", ""},
		{"flux git source for an oci environment", ks("GitRepository", "./apps/checkout/overlays/staging"), "staging",
			"reads a Git source, but environment staging's source is an OCI"},
		{"flux oci source for a git environment", ks("OCIRepository", "./apps/checkout/overlays/production"), "production",
			"reads an OCI source, but environment production's source is a Git"},
		{"argocd oci source for a git environment", app("OCI://registry.example/x", "apps/checkout/overlays/production"), "production",
			"environment production's source is a Git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.CheckController("checkout", tc.env, ControllerOf(tc.obj, ""))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if re := wantRefusal(t, err); re.Field != "environments."+tc.env+".source" {
				t.Fatalf("got field %q, want environments.%s.source: %v", re.Field, tc.env, err)
			}
			// What it says: testdata/source-kinds.golden.
			msgs(tc.name+" ["+tc.want+"]", err)
		})
	}
}
