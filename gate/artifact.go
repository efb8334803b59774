package gate

import (
	"fmt"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/policy"
)

// ArtifactImages lists, for the declared containers of the artifact's
// repository, each distinct image other than the artifact's digest (to
// refuse it), with the repository and how many containers run it.
func ArtifactImages(d *acceptance.Declaration, artifactImage string) (repo string, others []string, count int) {
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
