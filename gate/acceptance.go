package gate

import (
	"bytes"
	"context"
	"fmt"
	"path"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/render"
)

// RuleAcceptance refuses a target overlay's committed Acceptance (the Flux
// setup) that is not the fresh render of head.
const RuleAcceptance = "committed-acceptance"

// committedAcceptance is the committed Acceptance file of the overlay p
// (GitOps-root-relative) and its content in tree (nil when it has none).
func committedAcceptance(ctx context.Context, tree *gitops.Tree, p string) (string, []byte, error) {
	file := path.Join(p, acceptance.File)
	if err := ctx.Err(); err != nil {
		return file, nil, err
	}
	data, err := tree.OptionalFile(file)
	if err != nil {
		return file, nil, fmt.Errorf("reading %s at %s: %w", file, tree.Rev, err)
	}
	return file, data, nil
}

// freshAcceptance is the committed Acceptance file as a promotion writes
// it: d's declared Acceptance, stamped with renderer, keeping the
// namespace and source repository URL of prev, the file before (the flags
// `render --write-acceptance` was run with).
func freshAcceptance(d *acceptance.Declaration, file string, prev []byte, renderer string) ([]byte, error) {
	return acceptance.Refresh(d, file, prev, renderer)
}

// RefreshAcceptance is, for a promotion's edit of the overlay p in tree
// declared as d, the committed Acceptance to write in the same commit:
// its file and content, or "" when the overlay commits none.
func RefreshAcceptance(ctx context.Context, tree *gitops.Tree, p string, d *acceptance.Declaration, renderer string) (string, []byte, error) {
	file, prev, err := committedAcceptance(ctx, tree, p)
	if err != nil || prev == nil {
		return "", nil, err
	}
	data, err := freshAcceptance(d, file, prev, renderer)
	return file, data, err
}

// isCommittedAcceptance reports whether rel is the target overlay's
// committed Acceptance, present at base and head: the one file a
// promotion may change besides the record and the kustomization (the
// acceptance step judges its content).
func (c *promotionCheck) isCommittedAcceptance(rel string) bool {
	file := path.Join(c.rec.Target.Path, acceptance.File)
	if rel != file {
		return false
	}
	for _, t := range []*gitops.Tree{c.bt, c.ht} {
		if !t.IsFile(file) {
			return false
		}
	}
	return true
}

// acceptance refuses a committed Acceptance in the target overlay that is
// not, byte for byte, the one the promotion writes for head's render (the
// declared Acceptance, stamped with the record's renderer, keeping the
// namespace and source repository URL of base's file): left stale, or
// edited by hand.
func (c *promotionCheck) acceptance(ctx context.Context) error {
	if c.declared == nil {
		return nil // the policy step refused the render
	}
	file, head, err := committedAcceptance(ctx, c.ht, c.rec.Target.Path)
	if err != nil || head == nil {
		return err
	}
	_, base, err := committedAcceptance(ctx, c.bt, c.rec.Target.Path)
	if err != nil || base == nil {
		return err // added: the file step refuses it
	}
	want, err := freshAcceptance(c.declared, file, base, c.rec.Target.Renderer)
	if err != nil {
		return err
	}
	if bytes.Equal(want, head) {
		return nil
	}
	why := "it differs from the one the promotion writes (metadata or encoding changed)"
	if objs, err := render.DecodeManifests(head, file); err == nil {
		d := *c.declared
		d.Committed = objs
		if stale := d.Stale(); stale != "" {
			why = "stale: " + stale
		}
	}
	c.rep.refuse(Finding{Rule: RuleAcceptance, File: file, Field: "spec"},
		"%s is not the fresh render of head: %s (propose and rollback refresh it; run throughline render --write-acceptance %s)",
		file, why, c.rec.Target.Path)
	return nil
}
