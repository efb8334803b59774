package policyfile

import (
	"fmt"
	"path/filepath"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
)

// Judged is the environment a local render or pin judges a path in.
type Judged struct {
	// Environment is the environment ("" for none).
	Environment string
	// App is the registry's app of the path ("" without a registry, or
	// for a path it does not list): the Acceptance's app.
	App string
	// ByDirectory (no registry) lets an empty Environment be the directory
	// name under overlays/ (policy.Environment).
	ByDirectory bool
	// Unlisted says, with a registry, that it lists no environment for
	// the path (judged in none), for the log; "" when it does.
	Unlisted string
}

// JudgedIn is the environment a render or pin run on a work tree judges
// abs in, by the registry of the policy file at root: the environment
// whose paths hold abs, and its app there, which env and app (flags, ""
// when not given) must agree with (exit 3 naming the registry); a path the
// registry does not list is judged in no environment (only unscoped
// allow-list exceptions hold) and claiming one for it is refused. Only
// without a registry is env as given and, when empty, the directory name
// under overlays/: with a registry a directory name never chooses the
// environment (a contributor can name a directory anything). The plugin
// is stricter (cmp: an Application renders a listed path or nothing).
func JudgedIn(root, abs, app, env string, maxFileSize int64) (Judged, error) {
	reg, err := ReadRoot(root, maxFileSize)
	if err != nil {
		return Judged{}, err
	}
	if !reg.Configured() {
		return Judged{Environment: env, ByDirectory: true}, nil
	}
	rel, err := renderedPath(root, abs)
	if err != nil {
		return Judged{}, err
	}
	if _, _, _, ok := reg.Locate(rel); !ok && env == "" {
		return Judged{Unlisted: fmt.Sprintf("%s is no environment's path in %s: judged in no environment "+
			"(allow-list entries with environments do not hold)", rel, reg.File())}, nil
	}
	res, err := reg.Resolve(environment.Claim{App: app, Environment: env, Path: rel})
	if err != nil {
		return Judged{}, err
	}
	return Judged{Environment: res.Environment, App: res.App}, nil
}

// renderedPath is abs relative to root, both with symlinks resolved as
// render resolves them: the registry judges the directory that renders.
func renderedPath(root, abs string) (string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", exitcode.Usagef("root %s: %v", root, err)
	}
	for _, p := range []*string{&absRoot, &abs} {
		if r, err := filepath.EvalSymlinks(*p); err == nil {
			*p = r
		}
	}
	rel, err := filepath.Rel(absRoot, abs)
	if err != nil {
		return "", exitcode.Usagef("path %s in root %s: %v", abs, root, err)
	}
	return filepath.ToSlash(rel), nil
}
