package promote

import (
	"context"
	"path"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// DefaultPath is app's overlay in env when the registry is empty.
func DefaultPath(app, env string) string { return path.Join("apps", app, "overlays", env) }

// ResolveTarget resolves app's target in env against the registry at rev:
// the environment derived from p must be env, the path ("" for the
// registry's, else DefaultPath) and the cluster ("" for the registry's,
// else env) must be env's. A disagreement is a refusal (exit 3) naming the
// registry.
func ResolveTarget(ctx context.Context, r *gitops.Repo, rev, app, env, p, cluster string) (*environment.Resolved, error) {
	reg, err := promotion.ReadRegistry(ctx, r, rev)
	if err != nil {
		return nil, err
	}
	return resolveTarget(reg, app, env, p, cluster)
}

func resolveTarget(reg *environment.Registry, app, env, p, cluster string) (*environment.Resolved, error) {
	res, err := reg.Resolve(environment.Claim{App: app, Environment: env, Path: p, Cluster: cluster})
	if err != nil {
		return nil, err
	}
	if res.Path == "" {
		res.Path = DefaultPath(app, env)
	}
	return res, nil
}

// resolveRequest resolves req against the registry at rev: its source
// environment must be one of the registry's, its target path and cluster
// those of its target environment (filled in when not given).
func resolveRequest(ctx context.Context, r *gitops.Repo, rev string, req ProposeRequest) (ProposeRequest, error) {
	reg, err := promotion.ReadRegistry(ctx, r, rev)
	if err != nil {
		return req, err
	}
	if reg.Configured() {
		if _, err := reg.Lookup(req.From); err != nil {
			return req, err
		}
		if err := reg.CheckOrder(req.From, req.To); err != nil {
			return req, err
		}
	}
	res, err := resolveTarget(reg, req.App, req.To, req.Path, req.Cluster)
	if err != nil {
		return req, err
	}
	req.Path, req.Cluster = res.Path, res.Cluster
	return req, nil
}
