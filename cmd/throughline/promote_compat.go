package main

import (
	"context"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/render"
)

// This file keeps the names breakglass.go used from the old
// promote_repo.go, on top of package gitops, so that the branches merge.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).

// pushAttempts is gitops.PushAttempts.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
const pushAttempts = gitops.PushAttempts

// promoteRepo is the GitOps repository (gitops.Repo) with its base branch
// under the old name.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
type promoteRepo struct {
	*gitops.Repo
	base string
}

// openPromoteRepo is gitops.Open.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
func openPromoteRepo(ctx context.Context, dir string) (*promoteRepo, error) {
	r, err := gitops.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &promoteRepo{Repo: r, base: r.Base}, nil
}

// baseRev is gitops.Repo.BaseRev.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
func (r *promoteRepo) baseRev(ctx context.Context) (string, error) { return r.BaseRev(ctx) }

// exportedRev is one revision of the repository on disk.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
type exportedRev struct {
	rev, root string
}

// export is gitops.Repo.Tree: the revision and its GitOps root on disk,
// and the cleanup that removes it.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
func (r *promoteRepo) export(ctx context.Context, rev string) (*exportedRev, func(), error) {
	t, err := r.Tree(ctx, rev)
	if err != nil {
		return nil, nil, err
	}
	return &exportedRev{rev: t.Rev, root: t.Root}, func() { _ = t.Close() }, nil
}

// promoteRawRender is gitops.Tree.Render of the tree whose GitOps root is
// root.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
func promoteRawRender(ctx context.Context, root, p string) ([]render.Object, string, error) {
	return (&gitops.Tree{Root: root}).Render(ctx, p)
}

// promoteDeclare is gitops.Tree.Declare with this build's version.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
func promoteDeclare(ctx context.Context, root, p, env string) (*acceptance.Declaration, error) {
	return (&gitops.Tree{Root: root}).Declare(ctx, p, env, buildVersion())
}

// kustomizationFile is gitops.Tree.KustomizationFile.
//
// Deprecated: removed once breakglass.go uses gitops (issue 13).
func kustomizationFile(ctx context.Context, root, p string) (string, error) {
	return (&gitops.Tree{Root: root}).KustomizationFile(ctx, p)
}
