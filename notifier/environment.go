package notifier

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// RegistryFunc reads the environment registry a delivery is judged by.
type RegistryFunc func(ctx context.Context) (*environment.Registry, error)

// BaseRegistry reads the environment registry of the policy file at the
// tip of r's base branch (as last fetched): the rules a delivery is judged
// by are the merged ones, never a branch's.
func BaseRegistry(r *gitops.Repo) RegistryFunc {
	return func(ctx context.Context) (*environment.Registry, error) {
		rev, err := r.BaseRev(ctx)
		if err != nil {
			return nil, err
		}
		return promotion.ReadRegistry(ctx, r, rev)
	}
}

// checkEnvironment refuses (ErrUnbound: 409, nothing written) a delivery
// for ev's app and environment whose controller object u (binding the
// namespaces nss) renders a path the registry gives to another
// environment or app, or none, or deploys to a namespace that is not one
// of the environment's (environment.Registry.CheckController). prefix is
// the GitOps root inside the repository the controller reads.
func checkEnvironment(reg *environment.Registry, ev Event, u *unstructured.Unstructured, nss []string, prefix string) error {
	c := environment.ControllerOf(u.Object, prefix)
	c.Object, c.Namespaces = ev.Ref.String(), nss
	if err := reg.CheckController(ev.App, ev.Environment, c); err != nil {
		var re *exitcode.Refusal
		if !errors.As(err, &re) {
			return err
		}
		return fmt.Errorf("%s: %w: by the environment registry at the base: %w", ev.Ref, ErrUnbound, err)
	}
	return nil
}
