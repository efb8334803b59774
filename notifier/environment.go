package notifier

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

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
		pol, err := promotion.ReadPolicy(ctx, r, rev)
		if err != nil {
			return nil, err
		}
		return promotion.Registry(pol)
	}
}

// sourcePaths are the repository paths the controller object u renders:
// an Application's spec.source.path and every spec.sources[].path, a
// Kustomization's spec.path.
func sourcePaths(u *unstructured.Unstructured) []string {
	var out []string
	add := func(p string) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if u.GetKind() == KindKustomization {
		p, _, _ := unstructured.NestedString(u.Object, "spec", "path")
		add(p)
		return out
	}
	p, _, _ := unstructured.NestedString(u.Object, "spec", "source", "path")
	add(p)
	sources, _, _ := unstructured.NestedSlice(u.Object, "spec", "sources")
	for _, s := range sources {
		if m, ok := s.(map[string]any); ok {
			p, _ := m["path"].(string)
			add(p)
		}
	}
	return out
}

// checkEnvironment refuses (ErrUnbound: 409, nothing written) a delivery
// for ev's app and environment whose controller object u (binding the
// namespaces nss) renders a path the registry gives to another
// environment or app, or none, or deploys to a namespace that is not one
// of the environment's. prefix is the GitOps root inside the repository
// the controller reads ("" or ending in "/"). An empty registry checks
// nothing.
func checkEnvironment(reg *environment.Registry, ev Event, u *unstructured.Unstructured, nss []string, prefix string) error {
	if !reg.Configured() {
		return nil
	}
	paths := sourcePaths(u)
	if len(paths) == 0 {
		return fmt.Errorf("%s: %w: it names no source path, so no environment of %s", ev.Ref, ErrUnbound, reg.File())
	}
	for _, p := range paths {
		rel := path.Clean(strings.TrimPrefix(p, "./"))
		rel, ok := strings.CutPrefix(rel+"/", prefix)
		if !ok {
			return fmt.Errorf("%s: %w: its source path %s is outside the GitOps root %s", ev.Ref, ErrUnbound, p, prefix)
		}
		rel = strings.TrimSuffix(rel, "/")
		claims := []environment.Claim{{App: ev.App, Environment: ev.Environment, Path: rel}}
		for _, ns := range nss {
			claims = append(claims, environment.Claim{App: ev.App, Environment: ev.Environment, Path: rel, Namespace: ns})
		}
		for _, c := range claims {
			if _, err := reg.Resolve(c); err != nil {
				var re *exitcode.Refusal
				if errors.As(err, &re) {
					return fmt.Errorf("%s: %w: it does not deploy %s in %s by the environment registry at the base: %w",
						ev.Ref, ErrUnbound, ev.App, ev.Environment, err)
				}
				return err
			}
		}
	}
	return nil
}
