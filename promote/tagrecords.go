package promote

import (
	"context"
	"fmt"
	"sort"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
)

// movedTagSighting is a version of a record in Git history that names the
// artifact's tag with another digest.
type movedTagSighting struct {
	File, Commit, PromotionID, Image, Digest string
}

// recordedTagMoves reads every version of every promotion record in the
// history of rev and lists those whose artifact is image's repository and
// tag with another digest than image's: the tag -> digest history the
// records already keep. An image without a tag has none. A version that
// cannot be read as a record is skipped (the record gates judge records;
// this one only reads which digest a tag had).
func recordedTagMoves(ctx context.Context, r *gitops.Repo, rev, image string) ([]movedTagSighting, error) {
	want, err := policy.CheckImage(image)
	if err != nil || want.Tag == "" {
		return nil, nil
	}
	files, err := r.ListTree(ctx, rev, promotion.Dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []movedTagSighting
	for _, f := range files {
		app, env, ok := recordName(f)
		if !ok {
			continue
		}
		commits, err := r.FileHistory(ctx, rev, f)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", f, err)
		}
		for _, c := range commits {
			rec, err := promotion.ReadRecord(ctx, r, c, app, env)
			if exitcode.Code(err) == exitcode.Invalid || rec == nil {
				continue
			}
			if err != nil {
				return nil, err
			}
			got, err := policy.CheckImage(rec.Artifact.Image)
			if err != nil || got.Repository != want.Repository || got.Tag != want.Tag || got.Digest == want.Digest || seen[got.Digest+f] {
				continue
			}
			seen[got.Digest+f] = true
			out = append(out, movedTagSighting{File: f, Commit: c, PromotionID: rec.PromotionID, Image: rec.Artifact.Image, Digest: got.Digest})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File+out[i].Digest < out[j].File+out[j].Digest })
	return out, nil
}

// recordedTags is the PR gate's step over the records' tag history: a tag
// the records name with another digest is refused, or only warned about
// when the base's policy says movedTags: warn.
func (c *check) recordedTags(ctx context.Context) error {
	moves, err := recordedTagMoves(ctx, c.r, c.rep.Base, c.rec.Artifact.Image)
	if err != nil {
		return err
	}
	for _, m := range moves {
		f := Finding{Rule: RuleMovedTag, File: m.File, Field: "artifact.image",
			Reason: fmt.Sprintf("moved tag: %s names %s, but %s recorded it as %s (%s at %s)", c.rec.Artifact.Image, c.rec.Artifact.Digest,
				m.File, m.Digest, m.PromotionID, short(m.Commit))}
		if c.pol.WarnMovedTags() {
			c.rep.Warnings = append(c.rep.Warnings, f)
			continue
		}
		c.rep.refuse(f, "%s", f.Reason)
	}
	return nil
}
