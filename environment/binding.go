package environment

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// checkBinding checks an environment's controller binding (field is
// environments.<name>.binding).
func checkBinding(field string, b *v1alpha1.ControllerBinding) error {
	if b == nil {
		return nil
	}
	for i, u := range b.RepoURLs {
		if strings.TrimSpace(u) == "" || strings.ContainsAny(u, " \t\n") {
			return fmt.Errorf("%s.repoURLs[%d]: %q is not a repository URL", field, i, u)
		}
	}
	if b.Pinned && b.TargetRevision == "" {
		return fmt.Errorf("%s.pinned: set without targetRevision (the branch whose commits the environment is pinned to)", field)
	}
	if b.Server != "" {
		if u, err := url.Parse(b.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%s.server: %q is not an https URL of an API server", field, b.Server)
		}
	}
	if s := b.FluxSource; s != nil {
		switch s.Kind {
		case "GitRepository", "OCIRepository", "Bucket":
		default:
			return fmt.Errorf("%s.fluxSource.kind: %q: want GitRepository, OCIRepository or Bucket", field, s.Kind)
		}
		if s.Name == "" {
			return fmt.Errorf("%s.fluxSource.name: empty", field)
		}
	}
	return nil
}

// SameRepoURL reports whether two repository URLs name the same repository
// as a controller reads it: equal but for case of the host, a trailing
// "/" or ".git".
func SameRepoURL(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "/"), ".git")
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			u.Host = strings.ToLower(u.Host)
			return u.String()
		}
		return s
	}
	return norm(a) == norm(b)
}
