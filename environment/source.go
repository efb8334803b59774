package environment

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// SourceKind is what an environment's controllers read.
type SourceKind string

// The source kinds.
const (
	// SourceGit: the GitOps repository (the default). Revisions are commit
	// ids.
	SourceGit SourceKind = "git"
	// SourceOCI: an OCI artifact CI pushes from the repository. Revisions
	// are manifest digests (sha256:<hex>).
	SourceOCI SourceKind = "oci"
)

// SourceKind is the environment's source kind; a nil environment (an
// empty registry) reads Git.
func (e *Environment) SourceKind() SourceKind {
	if e != nil && e.Source != nil && e.Source.OCI != nil {
		return SourceOCI
	}
	return SourceGit
}

// OCI is the environment's OCI source, nil for a Git one.
func (e *Environment) OCI() *v1alpha1.OCISourcePolicy {
	if e.SourceKind() != SourceOCI {
		return nil
	}
	return e.Source.OCI
}

// OCIReference is the reference the environment's controllers follow
// (repository:tag), "" for a Git environment.
func (e *Environment) OCIReference() string {
	o := e.OCI()
	if o == nil {
		return ""
	}
	return o.Repository + ":" + o.Tag
}

// SourceKindOf is env's source kind in the registry: Git for an empty
// registry or an unknown environment (Lookup refuses those where it
// matters).
func (r *Registry) SourceKindOf(env string) SourceKind {
	e, _ := r.Get(env)
	return e.SourceKind()
}

// checkSource checks an environment's source (field is
// "environments.<name>"): an OCI source names a repository without scheme,
// tag or digest and a tag.
func checkSource(field string, s *v1alpha1.SourcePolicy) error {
	if s == nil {
		return nil
	}
	field += ".source"
	if s.OCI == nil {
		return fmt.Errorf("%s: oci is required (omit source for a Git environment)", field)
	}
	o := s.OCI
	switch {
	case strings.Contains(o.Repository, "://"):
		return fmt.Errorf("%s.oci.repository: %q: no scheme (oci://): host/path", field, o.Repository)
	case strings.ContainsAny(o.Repository, "@") || strings.Count(o.Repository[strings.LastIndex(o.Repository, "/")+1:], ":") > 0:
		return fmt.Errorf("%s.oci.repository: %q: a repository, without tag or digest (the tag is oci.tag)", field, o.Repository)
	}
	if _, err := name.NewRepository(o.Repository, name.StrictValidation); err != nil {
		return fmt.Errorf("%s.oci.repository: %q: %w", field, o.Repository, err)
	}
	if _, err := name.NewTag(o.Repository+":"+o.Tag, name.StrictValidation); err != nil || o.Tag == "" {
		return fmt.Errorf("%s.oci.tag: %q is not a tag", field, o.Tag)
	}
	return nil
}

// sourceOf is the source kind a controller object's spec reads: a
// Kustomization's spec.sourceRef.kind (OCIRepository, GitRepository; ""
// for another kind such as Bucket), an Application's spec.source.repoURL
// or, when every one of spec.sources agrees, theirs (oci:// is OCI).
func sourceOf(kind string, spec map[string]any) SourceKind {
	if kind == "Kustomization" {
		ref, _ := spec["sourceRef"].(map[string]any)
		switch k, _ := ref["kind"].(string); k {
		case "OCIRepository":
			return SourceOCI
		case "GitRepository":
			return SourceGit
		}
		return ""
	}
	of := func(src any) SourceKind {
		m, _ := src.(map[string]any)
		u, _ := m["repoURL"].(string)
		switch {
		case u == "":
			return ""
		case strings.HasPrefix(strings.ToLower(u), "oci://"):
			return SourceOCI
		}
		return SourceGit
	}
	if src, ok := spec["source"]; ok {
		return of(src)
	}
	srcs, _ := spec["sources"].([]any)
	var k SourceKind
	for i, s := range srcs {
		if sk := of(s); i == 0 {
			k = sk
		} else if sk != k {
			return ""
		}
	}
	return k
}

// checkSource says why controller c does not read env's kind of source
// ("" when it does, or does not say): an OCI source for a Git environment
// or a Git source for an OCI one. The revisions it reports would be read
// as the wrong kind (a SHA-256 commit as a digest, or the reverse).
func (r *Registry) checkSource(env string, c Controller) string {
	want := r.SourceKindOf(env)
	if c.Source == "" || c.Source == want {
		return ""
	}
	return fmt.Sprintf("%s reads %s source, but environment %s's source is %s in %s", c.Object, c.Source.described(), env, want.described(), r.file)
}

// described is "an OCI" or "a Git".
func (k SourceKind) described() string {
	if k == SourceOCI {
		return "an OCI"
	}
	return "a Git"
}
