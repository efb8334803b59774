package main

import (
	"path/filepath"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
)

// registryEnvironment is the environment render and pin judge abs in, by
// the registry of the policy file at root: the environment whose paths
// hold abs, which env and app (flags, "" when not given) must agree with
// (exit 3 naming the registry). Without a registry, or for a path of no
// environment when env is not given, it is env as given (the allow-list's
// environment-scoped entries then match by the directory name under
// overlays/, policy.Environment).
func registryEnvironment(root, abs, app, env string, maxFileSize int64) (string, error) {
	reg, err := promotion.ReadRootRegistry(root, maxFileSize)
	if err != nil || !reg.Configured() {
		return env, err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", exitcode.Usagef("root %s: %v", root, err)
	}
	rel, err := filepath.Rel(absRoot, abs)
	if err != nil {
		return "", exitcode.Usagef("path %s in root %s: %v", abs, root, err)
	}
	rel = filepath.ToSlash(rel)
	if _, _, _, ok := reg.Locate(rel); !ok && env == "" {
		return "", nil
	}
	res, err := reg.Resolve(environment.Claim{App: app, Environment: env, Path: rel})
	if err != nil {
		return "", err
	}
	return res.Environment, nil
}
