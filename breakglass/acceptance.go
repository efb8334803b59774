package breakglass

import (
	"fmt"
	"path"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/gitops"
)

// refreshAcceptance adds to plan the committed Acceptance of the overlay p
// (the Flux setup), refreshed for d, the overlay's render with the
// write-back, so that the write-back commit passes the PR job's
// render --check-acceptance as promote's commits do; nothing when the
// overlay commits none.
func refreshAcceptance(tree *gitops.Tree, p string, d *acceptance.Declaration, renderer string, plan *WritebackPlan) error {
	file := path.Join(p, acceptance.File)
	prev, err := tree.OptionalFile(file)
	if err != nil {
		return fmt.Errorf("reading the committed Acceptance %s: %w", file, err)
	}
	if prev == nil {
		return nil
	}
	data, err := acceptance.Refresh(d, file, prev, renderer)
	if err != nil {
		return err
	}
	plan.Files[file] = data
	return nil
}
