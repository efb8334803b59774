package ledger

import (
	"context"
	"sort"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
)

// MovedTag is a version of a record in Git history that names the
// artifact's tag with another digest.
type MovedTag struct {
	File, Commit, PromotionID, Image, Digest string
}

// MovedTags reads every version of every promotion record in the
// history of rev and lists those whose artifact is image's repository and
// tag with another digest than image's: the tag -> digest history the
// records already keep. An image without a tag has none. A version that
// cannot be read as a record is skipped (the record gates judge records;
// this one only reads which digest a tag had).
func MovedTags(ctx context.Context, r *gitops.Repo, rev, image string) ([]MovedTag, error) {
	want, err := policy.CheckImage(image)
	if err != nil || want.Tag == "" {
		return nil, nil
	}
	files, err := r.ListTree(ctx, rev, promotion.Dir)
	if err != nil {
		return nil, err
	}
	rd := &Reader{Repo: r}
	seen := map[string]bool{}
	var out []MovedTag
	for _, f := range files {
		app, env, ok := recordName(f)
		if !ok {
			continue
		}
		versions, err := rd.Versions(ctx, rev, app, env)
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			c, rec := v.Commit, v.rec
			if rec == nil {
				continue
			}
			got, err := policy.CheckImage(rec.Artifact.Image)
			if err != nil || got.Repository != want.Repository || got.Tag != want.Tag || got.Digest == want.Digest || seen[got.Digest+f] {
				continue
			}
			seen[got.Digest+f] = true
			out = append(out, MovedTag{File: f, Commit: c, PromotionID: rec.PromotionID, Image: rec.Artifact.Image, Digest: got.Digest})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File+out[i].Digest < out[j].File+out[j].Digest })
	return out, nil
}
