package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// promoteRepo is the GitOps repository a promote command works on.
type promoteRepo struct {
	*gitrepo.Repo
	base string // the branch promotions start from
}

func openPromoteRepo(ctx context.Context, dir string) (*promoteRepo, error) {
	if dir == "" {
		return nil, exitcode.Usagef("--repo DIR is required")
	}
	r, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: dir, Err: err}
	}
	if err := r.Fetch(ctx); err != nil {
		return nil, exitcode.NotDecided(err)
	}
	return &promoteRepo{Repo: r, base: r.DefaultBranch(ctx)}, nil
}

// baseRev is the commit of the base branch (the remote's after a fetch).
func (r *promoteRepo) baseRev(ctx context.Context) (string, error) {
	if r.Remote != "" {
		if sha, err := r.Resolve(ctx, "refs/remotes/"+r.Remote+"/"+r.base); err == nil {
			return sha, nil
		}
	}
	if sha, err := r.Resolve(ctx, "refs/heads/"+r.base); err == nil {
		return sha, nil
	}
	return r.Resolve(ctx, "HEAD")
}

// readRecord reads and validates the record of app/env at rev; nil when
// there is none.
func (r *promoteRepo) readRecord(ctx context.Context, rev, app, env string) (*promotion.Record, error) {
	file := promotion.RecordPath(app, env)
	data, err := r.ReadFile(ctx, rev, file)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := promotion.Parse(file, data)
	if err != nil {
		return nil, recordInputError(err)
	}
	if rec.App != app || rec.Target.Environment != env {
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("names app %q environment %q, but lives at the path of %s/%s", rec.App, rec.Target.Environment, app, env)}
	}
	return rec, nil
}

// readPolicy reads the promotion policy at rev (nil when absent).
func (r *promoteRepo) readPolicy(ctx context.Context, rev string) (*promotion.Policy, error) {
	data, err := r.ReadFile(ctx, rev, promotion.PolicyFile)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := promotion.ParsePolicy(promotion.PolicyFile, data)
	if err != nil {
		return nil, recordInputError(err)
	}
	return p, nil
}

func recordInputError(err error) error {
	var re *promotion.RecordError
	if errors.As(err, &re) {
		// The record error names the file and the field already.
		return &exitcode.InvalidInput{Err: err}
	}
	return err
}

// exported is one revision of the repository on disk.
type exportedRev struct {
	rev, root string
}

func (r *promoteRepo) export(ctx context.Context, rev string) (*exportedRev, func(), error) {
	tmp, err := os.MkdirTemp("", "throughline-rev-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	root, err := r.Export(ctx, rev, filepath.Join(tmp, "tree"))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return &exportedRev{rev: rev, root: root}, cleanup, nil
}

// rawRender renders the app at p without policy: the objects and their hash.
func promoteRawRender(ctx context.Context, root, p string) ([]render.Object, string, error) {
	app, err := render.Open(ctx, render.Options{Root: root, Path: filepath.Join(root, filepath.FromSlash(p))})
	if err != nil {
		return nil, "", err
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return nil, "", err
	}
	var plain []render.Object
	for _, o := range objs {
		if !acceptance.IsAcceptance(o) {
			plain = append(plain, o)
		}
	}
	h, err := render.Hash(plain)
	if err != nil {
		return nil, "", &exitcode.InvalidInput{File: p, Err: err}
	}
	return plain, h, nil
}

// declare renders with every policy rule (a *policy.Refusal on refusal).
func promoteDeclare(ctx context.Context, root, p, env string) (*acceptance.Declaration, error) {
	return acceptance.Declare(ctx, acceptance.Request{
		Render:      render.Options{Root: root, Path: filepath.Join(root, filepath.FromSlash(p))},
		Environment: env, Renderer: buildVersion(),
	})
}

// kustomizationFile finds the kustomization of the overlay at p under root.
func kustomizationFile(ctx context.Context, root, p string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		rel := path.Join(p, n)
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			return rel, nil
		}
	}
	return "", &exitcode.InvalidInput{File: p, Err: errors.New("no kustomization: a promotion target must be a kustomize overlay with an images: entry")}
}

// artifactDigests lists, for the declared containers of the artifact's
// repository, each distinct image (to refuse any other digest).
func artifactImages(d *acceptance.Declaration, artifactImage string) (repo string, others []string, count int) {
	p, err := policy.CheckImage(artifactImage)
	if err != nil {
		return "", nil, 0
	}
	seen := map[string]bool{}
	for _, c := range d.Policy.Containers {
		if c.Pinned.Repository != p.Repository {
			continue
		}
		count++
		if c.Pinned.Digest != p.Digest && !seen[c.Image] {
			seen[c.Image] = true
			others = append(others, fmt.Sprintf("%s %s: %s", c.Object, c.Path, c.Image))
		}
	}
	return p.Repository, others, count
}

// updateRecord moves APP/ENV's record on branch with a compare-and-swap
// commit: on every attempt it reads the record at the branch tip (refusing
// when there is none), lets advance check and transition it (returning the
// commit message; a refusal should be a *refusedError), validates and writes
// it. It returns the record as committed and the commit.
func (r *promoteRepo) updateRecord(ctx context.Context, branch, app, env, missing string,
	advance func(ctx context.Context, tip string, rec *promotion.Record) (string, error)) (*promotion.Record, string, error) {
	var rec *promotion.Record
	sha, err := r.Update(ctx, branch, pushAttempts, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		var err error
		rec, err = r.readRecord(ctx, tip, app, env)
		if err != nil {
			return nil, "", err
		}
		if rec == nil {
			return nil, "", &exitcode.Refusal{Rule: "promotion", Reason: fmt.Sprintf("branch %s has no record %s%s", branch, promotion.RecordPath(app, env), missing)}
		}
		msg, err := advance(ctx, tip, rec)
		if err != nil {
			return nil, "", err
		}
		data, err := rec.Marshal()
		if err != nil {
			return nil, "", err
		}
		return map[string][]byte{promotion.RecordPath(app, env): data}, msg, nil
	})
	return rec, sha, err
}
