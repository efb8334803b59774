package acceptance

import (
	"errors"
	"io/fs"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion/policyfile"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

// runtime puts the app's runtime checks (checkfile.File in its directory)
// and its environment's deadlines (the registry's rolloutDeadline and
// reconcileDeadline) into the declared Acceptance. Both are read through
// the render's confined filesystem, so the plugin's cache sees them as
// inputs of the render.
func (d *Declaration) runtime(req Request) error {
	reg := req.Registry
	if reg == nil {
		var err error
		if reg, err = readRegistry(d); err != nil {
			return err
		}
	}
	a := &d.Acceptance
	var env *environment.Environment
	if a.Spec.Environment != "" {
		env, _ = reg.Get(a.Spec.Environment)
	}
	checks, err := checkfile.Read(d.App.FS, d.App.RelDir(), checkfile.Options{
		Environment: env, App: a.Spec.App, Namespace: a.Namespace, ParseQuery: req.ParseQuery,
	})
	if err != nil {
		return err
	}
	a.Spec.Checks = checks
	if env != nil && (env.RolloutDeadline != nil || env.ReconcileDeadline != nil) {
		a.Spec.Deadlines = &v1alpha1.Deadlines{Rollout: env.RolloutDeadline, ObservedRevision: env.ReconcileDeadline}
	}
	return nil
}

// readRegistry reads the environment registry (policyfile.File at the
// root) through the render's filesystem: the empty registry without one.
func readRegistry(d *Declaration) (*environment.Registry, error) {
	data, err := d.App.FS.ReadRootFile(policyfile.File)
	if errors.Is(err, fs.ErrNotExist) {
		return policyfile.Registry(nil)
	}
	if err != nil {
		return nil, err
	}
	pol, err := policyfile.Parse(policyfile.File, data)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: err}
	}
	return policyfile.Registry(pol)
}
