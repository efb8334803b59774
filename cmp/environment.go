package cmp

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion/policyfile"
)

// resolveEnvironment checks what the Application claims against the
// environment registry of the policy file at root (the repository root the
// plugin sees, PolicyFile there): the environment of the path rendered (wd
// relative to root) must be the environment parameter, when given, and the
// Application's destination namespace (ARGOCD_APP_NAMESPACE), when given,
// one of that environment's namespaces; the app parameter, when given, must
// be the path's app. A disagreement is a refusal (exit 3) naming both
// sides. It returns env with the environment parameter set to the path's
// environment and, when the Application gives none, the app parameter set
// to the path's app (so that the Acceptance and the cache key say them);
// without a registry env is returned as it is and byDirectory is true (an
// empty environment parameter is then the directory name under overlays/,
// policy.Environment); with one a directory name never chooses it.
func resolveEnvironment(root, wd string, env Env, maxFileSize int64) (_ Env, byDirectory bool, _ error) {
	reg, err := policyfile.ReadRoot(root, maxFileSize)
	if err != nil {
		return env, false, err
	}
	if !reg.Configured() {
		return env, true, nil
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return env, false, fmt.Errorf("path of %s in %s: %w", wd, root, err)
	}
	rel = filepath.ToSlash(rel)
	claimed := env.Param(ParamEnvironment)
	res, err := reg.Resolve(environment.Claim{App: env.Param(ParamApp), Environment: claimed, Path: rel, Namespace: env.AppNamespace})
	if err != nil {
		var re *exitcode.Refusal
		if !errors.As(err, &re) {
			return env, false, err
		}
		return env, false, &exitcode.Refusal{Rule: re.Rule, File: re.File, Field: re.Field,
			Reason: fmt.Sprintf("Application %q (environment parameter %q, destination namespace %s=%q) renders %s: %s",
				env.AppName, claimed, EnvAppNamespace, env.AppNamespace, rel, re.Reason)}
	}
	out := env
	out.Params = maps.Clone(env.Params)
	if out.Params == nil {
		out.Params = map[string]string{}
	}
	out.Params[ParamEnvironment] = res.Environment
	if out.Params[ParamApp] == "" {
		// The app is the registry's app of the path (not the Application's
		// name, e.g. checkout-staging): the name promotion records,
		// evidence and the notifier know it by.
		out.Params[ParamApp] = res.App
	}
	return out, false, nil
}
