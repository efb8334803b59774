package environment

import (
	"fmt"
	"path"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
)

// Claim is what a command was told about the environment it acts in:
// every field but App may be empty (unknown, derived from the registry).
type Claim struct {
	App, Environment string
	// Path is the overlay path, relative to the repository root.
	Path string
	// Cluster and Namespace are a cluster name and a destination namespace
	// the caller was given (a flag, an Application's destination).
	Cluster, Namespace string
}

// Resolved is a claim that agrees with the registry, completed by it (the
// app is the path's app when the claim names none).
type Resolved struct {
	App, Environment, Path, Cluster string
	// Env is the registry's environment (nil when the registry is empty).
	Env *Environment
}

// Resolve checks c against the registry and completes it: the environment
// is the one whose paths hold c.Path (c.Environment, when given, must be
// it), the path is the environment's path of the app when c.Path is
// empty, the cluster the environment's. A disagreement is a refusal
// (exit 3) naming both sides. With an empty registry the claim passes as
// given (the environment's name is then its cluster).
func (r *Registry) Resolve(c Claim) (*Resolved, error) {
	if c.Path != "" {
		c.Path = path.Clean(strings.TrimPrefix(c.Path, "./"))
	}
	if !r.Configured() {
		res := &Resolved{App: c.App, Environment: c.Environment, Path: c.Path, Cluster: c.Cluster}
		if res.Cluster == "" {
			res.Cluster = c.Environment
		}
		return res, nil
	}
	env, app, err := r.environmentOf(c)
	if err != nil {
		return nil, err
	}
	res := &Resolved{App: app, Environment: env.Name, Path: c.Path, Cluster: env.ClusterName(), Env: env}
	if res.Path == "" {
		p, ok := env.Path(c.App)
		if !ok {
			return nil, r.mismatch(fmt.Sprintf("environments.%s.paths", env.Name),
				"environment %s lists no overlay path for app %s", env.Name, c.App)
		}
		res.Path = p
	}
	if c.Cluster != "" && c.Cluster != res.Cluster {
		return nil, r.mismatch(fmt.Sprintf("environments.%s.cluster", env.Name),
			"cluster %q is not environment %s's (%s names %q)", c.Cluster, env.Name, r.file, res.Cluster)
	}
	if c.Namespace != "" && !env.HasNamespace(c.Namespace) {
		return nil, r.mismatch(fmt.Sprintf("environments.%s.namespaces", env.Name),
			"namespace %q is not one of environment %s's destination namespaces (%s)", c.Namespace, env.Name, strings.Join(env.Namespaces, ", "))
	}
	return res, nil
}

// environmentOf is the environment c acts in and the app: the one whose
// paths hold c.Path (which must be c.Environment and c.App when those are
// given), else c.Environment and c.App.
func (r *Registry) environmentOf(c Claim) (*Environment, string, error) {
	if c.Path == "" {
		if c.Environment == "" {
			return nil, "", r.mismatch("environments", "neither an environment nor an overlay path was given")
		}
		e, err := r.Lookup(c.Environment)
		return e, c.App, err
	}
	if c.Environment != "" {
		if _, err := r.Lookup(c.Environment); err != nil {
			return nil, "", err
		}
	}
	app, name, field, ok := r.Locate(c.Path)
	switch {
	case !ok:
		return nil, "", r.mismatch("environments", "path %s belongs to no environment of %s (environments: %s)", c.Path, r.file, r.list())
	case c.Environment != "" && name != c.Environment:
		return nil, "", r.mismatch(field, "path %s is environment %s's, not %s's", c.Path, name, c.Environment)
	case c.App != "" && app != c.App:
		return nil, "", r.mismatch(field, "path %s is app %s's, not %s's", c.Path, app, c.App)
	}
	return r.envs[name], app, nil
}

func (r *Registry) mismatch(field, format string, args ...any) error {
	return &exitcode.Refusal{Rule: RuleMismatch, File: r.file, Field: field, Reason: fmt.Sprintf(format, args...)}
}
