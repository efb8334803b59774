package gate

import (
	"context"
	"fmt"

	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
)

// recordedTags is the PR gate's step over the records' tag history: a tag
// the records name with another digest is refused, or only warned about
// when the base's policy says movedTags: warn.
func (c *promotionCheck) recordedTags(ctx context.Context) error {
	moves, err := ledger.MovedTags(ctx, c.r, c.rep.Base, c.rec.Artifact.Image)
	if err != nil {
		return err
	}
	for _, m := range moves {
		f := Finding{Rule: RuleMovedTag, File: m.File, Field: "artifact.image",
			Reason: fmt.Sprintf("moved tag: %s names %s, but %s recorded it as %s (%s at %s)", c.rec.Artifact.Image, c.rec.Artifact.Digest,
				m.File, m.Digest, m.PromotionID, gitrepo.Short(m.Commit))}
		if c.pol.WarnMovedTags() {
			c.rep.Warnings = append(c.rep.Warnings, f)
			continue
		}
		c.rep.refuse(f, "%s", f.Reason)
	}
	return nil
}
