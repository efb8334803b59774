package environment

import (
	"fmt"
	"path"
	"strings"
)

// Controller is what a controller object (an Argo CD Application, a Flux
// Kustomization) renders and where it deploys it.
type Controller struct {
	// Object names it in refusals ("Application argocd/checkout").
	Object string
	// Paths are the paths it renders, relative to the GitOps root (a path
	// outside the root starts with "../").
	Paths []string
	// Namespaces are its destination namespaces.
	Namespaces []string
	// Source is the kind of source it reads ("" when it does not say):
	// OCI for a Kustomization whose spec.sourceRef.kind is OCIRepository
	// or an Application whose repoURL is oci://, Git for a GitRepository
	// or another repoURL (sourceOf).
	Source SourceKind
}

// ControllerOf reads a controller object's content (an unstructured
// object): an Application's spec.source.path, every spec.sources[].path
// and spec.destination.namespace; a Kustomization's spec.path and
// spec.targetNamespace. prefix is the GitOps root inside the repository
// the controller reads ("" or ending in "/").
func ControllerOf(obj map[string]any, prefix string) Controller {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	c := Controller{Object: kind + " " + ns + "/" + name}
	spec, _ := obj["spec"].(map[string]any)
	addPath := func(m map[string]any) {
		if p, _ := m["path"].(string); strings.TrimSpace(p) != "" {
			c.Paths = append(c.Paths, relPath(strings.TrimSpace(p), prefix))
		}
	}
	addNS := func(s any) {
		if s, _ := s.(string); s != "" {
			c.Namespaces = append(c.Namespaces, s)
		}
	}
	c.Source = sourceOf(kind, spec)
	if kind == "Kustomization" {
		addPath(spec)
		addNS(spec["targetNamespace"])
		return c
	}
	if src, ok := spec["source"].(map[string]any); ok {
		addPath(src)
	}
	if srcs, ok := spec["sources"].([]any); ok {
		for _, s := range srcs {
			if m, ok := s.(map[string]any); ok {
				addPath(m)
			}
		}
	}
	if dest, ok := spec["destination"].(map[string]any); ok {
		addNS(dest["namespace"])
	}
	return c
}

// relPath is p (relative to the repository) relative to the GitOps root
// prefix; outside it, "../" + p.
func relPath(p, prefix string) string {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	if prefix == "" {
		return p
	}
	if rel, ok := strings.CutPrefix(p+"/", prefix); ok {
		return path.Clean(strings.TrimSuffix(rel, "/"))
	}
	return "../" + p
}

// CheckController refuses (exit 3) a controller object that does not
// deploy app in env by the registry: env unknown, no source path, a path
// that is another environment's or app's (or none's), a destination
// namespace that is not one of env's. An empty registry checks nothing.
func (r *Registry) CheckController(app, env string, c Controller) error {
	if !r.Configured() {
		return nil
	}
	if _, err := r.Lookup(env); err != nil {
		return err
	}
	if why := r.checkSource(env, c); why != "" {
		return r.mismatch("environments."+env+".source", "%s", why)
	}
	if len(c.Paths) == 0 {
		return r.mismatch("environments", "%s names no source path: it deploys no environment of %s", c.Object, r.file)
	}
	for _, p := range c.Paths {
		for _, ns := range append([]string{""}, c.Namespaces...) {
			if _, err := r.Resolve(Claim{App: app, Environment: env, Path: p, Namespace: ns}); err != nil {
				return fmt.Errorf("%s does not deploy %s in %s: %w", c.Object, app, env, err)
			}
		}
	}
	return nil
}
