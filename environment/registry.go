package environment

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
)

// Wildcard is the path segment that stands for the app's name in a path
// pattern (apps/*/overlays/production).
const Wildcard = "*"

// Registry is the environment registry of one policy document.
type Registry struct {
	file  string
	envs  map[string]*Environment
	names []string
}

// Environment is one environment of the registry.
type Environment struct {
	Name string
	v1alpha1.EnvironmentPolicy
}

// New checks the registry of p (read from file) and returns it. A nil p is
// the empty registry. Every error is invalid input naming file and field.
func New(file string, p *v1alpha1.PromotionPolicy) (*Registry, error) {
	r, err := build(file, p)
	if err != nil {
		return nil, exitcode.InvalidFile(file, err)
	}
	return r, nil
}

// Check checks the registry of p: the error names the field (not the
// file), for a parser that names the file itself.
func Check(p *v1alpha1.PromotionPolicy) error {
	_, err := build("", p)
	return err
}

func build(file string, p *v1alpha1.PromotionPolicy) (*Registry, error) {
	r := &Registry{file: file, envs: map[string]*Environment{}}
	if p == nil {
		return r, nil
	}
	if err := checkTopLevel(p); err != nil {
		return nil, err
	}
	for name, ep := range p.Environments {
		if err := checkEnvironment(name, ep); err != nil {
			return nil, err
		}
		r.envs[name] = &Environment{Name: name, EnvironmentPolicy: ep}
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	for _, name := range r.names {
		if t := r.envs[name].Trust; t != nil && t.Attestations != nil && t.Attestations.VerificationSummary != nil {
			if want := t.Attestations.VerificationSummary.Environment; r.envs[want] == nil {
				return nil, fmt.Errorf("environments.%s.trust.attestations.verificationSummary.environment: %q is not an environment of %s",
					name, want, file)
			}
		}
	}
	if err := r.checkOverlaps(); err != nil {
		return nil, err
	}
	if err := r.checkOrder(); err != nil {
		return nil, err
	}
	return r, nil
}

// File is the policy file the registry was read from.
func (r *Registry) File() string { return r.file }

// Configured reports whether the policy declares any environment.
func (r *Registry) Configured() bool { return r != nil && len(r.names) > 0 }

// Names are the registry's environments, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.names)
}

// Get returns the environment called name.
func (r *Registry) Get(name string) (*Environment, bool) {
	if r == nil {
		return nil, false
	}
	e, ok := r.envs[name]
	return e, ok
}

// Lookup returns the environment called name, refusing (exit 3) a name
// the registry does not list.
func (r *Registry) Lookup(name string) (*Environment, error) {
	if e, ok := r.Get(name); ok {
		return e, nil
	}
	return nil, &exitcode.Refusal{Rule: RuleUnknown, File: r.File(), Field: "environments",
		Reason: fmt.Sprintf("environment %q is not in the registry (%s lists %s)", name, r.File(), r.list())}
}

func (r *Registry) list() string {
	if !r.Configured() {
		return "none"
	}
	return strings.Join(r.names, ", ")
}

// Locate returns the app and environment whose overlay path is p (a path
// relative to the repository root), and the registry field that says so;
// ok is false when no environment claims p.
func (r *Registry) Locate(p string) (app, env, field string, ok bool) {
	if r == nil {
		return "", "", "", false
	}
	p = path.Clean(strings.TrimPrefix(p, "./"))
	for _, name := range r.names {
		if app, field, ok := r.envs[name].Locate(p); ok {
			return app, name, field, true
		}
	}
	return "", "", "", false
}

// Locate returns the app whose overlay path in e is p (clean, relative)
// and the field of e that claims it.
func (e *Environment) Locate(p string) (app, field string, ok bool) {
	for _, a := range sortedKeys(e.Apps) {
		if path.Clean(e.Apps[a]) == p {
			return a, fmt.Sprintf("environments.%s.apps.%s", e.Name, a), true
		}
	}
	for i, pat := range e.Paths {
		if app, ok := matchPattern(pat, p); ok {
			return app, fmt.Sprintf("environments.%s.paths[%d]", e.Name, i), true
		}
	}
	return "", "", false
}

// Path returns app's overlay path in e: its explicit entry, else the first
// pattern with the app's name in the wildcard's place.
func (e *Environment) Path(app string) (string, bool) {
	if p, ok := e.Apps[app]; ok {
		return path.Clean(p), true
	}
	if len(e.Paths) == 0 {
		return "", false
	}
	segs := strings.Split(path.Clean(e.Paths[0]), "/")
	for i, s := range segs {
		if s == Wildcard {
			segs[i] = app
		}
	}
	return strings.Join(segs, "/"), true
}

// ClusterName is e's cluster: its own, else the environment's name.
func (e *Environment) ClusterName() string {
	if e.Cluster != "" {
		return e.Cluster
	}
	return e.Name
}

// HasNamespace reports whether ns is one of e's destination namespaces
// (true when e lists none).
func (e *Environment) HasNamespace(ns string) bool {
	if len(e.Namespaces) == 0 {
		return true
	}
	for _, pat := range e.Namespaces {
		if ok, err := path.Match(pat, ns); err == nil && ok {
			return true
		}
	}
	return false
}

// BindsNamespace reports whether the registry binds namespace ns to app
// in e: a namespace pattern with "*" binds the namespace with the app's
// name in the wildcard's place (*-staging binds checkout-staging to
// checkout, never payments-staging); a pattern without "*" is a namespace
// the environment's apps share. An environment that lists no namespace,
// or an empty app, binds none.
func (e *Environment) BindsNamespace(app, ns string) bool {
	for _, pat := range e.Namespaces {
		if strings.Contains(pat, Wildcard) {
			if app == "" {
				continue
			}
			pat = strings.ReplaceAll(pat, Wildcard, app)
		}
		if ok, err := path.Match(pat, ns); err == nil && ok {
			return true
		}
	}
	return false
}

// OwnsController reports whether file (relative to the repository root)
// holds one of e's controller objects.
func (e *Environment) OwnsController(file string) bool {
	file = path.Clean(strings.TrimPrefix(file, "./"))
	for _, pat := range e.Controllers {
		if ok, err := path.Match(path.Clean(pat), file); err == nil && ok {
			return true
		}
	}
	return false
}

// RequiredApprovals is how many distinct approvers must sign in e: its
// MinApprovals, else 1 when it lists approvers, else 0.
func (e *Environment) RequiredApprovals() int {
	switch {
	case e.MinApprovals > 0:
		return e.MinApprovals
	case len(e.Approvers) > 0:
		return 1
	}
	return 0
}

// IsApprover reports whether principal is one of e's approvers.
func (e *Environment) IsApprover(principal string) bool {
	return slices.Contains(e.Approvers, principal)
}

// matchPattern matches p against pat segment by segment; the wildcard
// segment matches any one segment, which is the app's name.
func matchPattern(pat, p string) (string, bool) {
	ps, segs := strings.Split(path.Clean(pat), "/"), strings.Split(p, "/")
	if len(ps) != len(segs) {
		return "", false
	}
	app := ""
	for i, s := range ps {
		switch {
		case s == Wildcard:
			if segs[i] == "" || segs[i] == "." || segs[i] == ".." {
				return "", false
			}
			app = segs[i]
		case s != segs[i]:
			return "", false
		}
	}
	return app, true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
