package promote

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/render"
)

// A chart app sets its images in its values (image.repository and a digest,
// or a full reference), not in a kustomization: propose writes the promoted
// digest where the target's own value files hold the digest the target runs
// now, and the PR gate accepts in those files exactly that replacement.

// writeChartValuesDigest writes digest for image name into the value files
// of the chart app at appPath (before: its objects as rendered now): every
// occurrence of a digest of name the target runs now becomes digest. It
// returns the files it changed; a target whose values hold none of them is
// refused (rule promotion): propose writes a digest where the values hold it.
func writeChartValuesDigest(tree *gitops.Tree, appPath string, before []render.Object, name, digest string) (map[string][]byte, error) {
	old := map[string]bool{}
	for _, o := range before {
		for _, c := range render.Containers(o) {
			if n, _ := overlay.SplitImage(c.Image); n == name {
				if _, d, ok := strings.Cut(c.Image, "@"); ok && d != digest {
					old[d] = true
				}
			}
		}
	}
	if len(old) == 0 {
		return nil, nil // the target runs the digest already (or not the image: the render check says so)
	}
	files, err := gate.ChartValueFiles(tree, appPath)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := tree.OptionalFile(f)
		if err != nil {
			return nil, err
		}
		edited := gate.DigestRE.ReplaceAllFunc(data, func(d []byte) []byte {
			if old[string(d)] {
				return []byte(digest)
			}
			return d
		})
		if !bytes.Equal(edited, data) {
			if err := tree.WriteFile(f, edited); err != nil {
				return nil, fmt.Errorf("writing %s: %w", f, err)
			}
			out[f] = edited
		}
	}
	if len(out) == 0 {
		return nil, exitcode.Refuse(RulePromotion, "the chart app %s runs %s@%s, but its value files %v (%s) do not hold that digest: "+
			"propose writes the promoted digest where the app's own values hold the one it runs", appPath, name, firstKey(old), files,
			path.Join(appPath, render.HelmParametersFile))
	}
	return out, nil
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
