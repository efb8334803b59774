package promote

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/render"
)

// A chart app sets its images in its values (image.repository and a digest,
// or a full reference), not in a kustomization: propose writes the promoted
// digest where the target's own value files hold the digest the target runs
// now, and the PR gate accepts in those files exactly that replacement.

// digestRE is a digest as it appears in a value file.
var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// chartValueFiles are the value files of the chart app at appPath that lie
// inside its directory, relative to the repository root, as its
// throughline-helm.yaml lists them (a value file shared with other
// environments is never a promotion's to edit).
func chartValueFiles(tree *gitops.Tree, appPath string) ([]string, error) {
	file := path.Join(appPath, render.HelmParametersFile)
	data, err := tree.OptionalFile(file)
	if err != nil || data == nil {
		return nil, err
	}
	opts, err := render.ParseHelmParametersFile(file, data)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, vf := range opts.ValueFiles {
		p := path.Join(appPath, vf)
		if strings.HasPrefix(p, appPath+"/") {
			out = append(out, p)
		}
	}
	return out, nil
}

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
	files, err := chartValueFiles(tree, appPath)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := tree.OptionalFile(f)
		if err != nil {
			return nil, err
		}
		edited := digestRE.ReplaceAllFunc(data, func(d []byte) []byte {
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

// chartValuesChange reports what else than a promotion changed in a chart
// app's value file from base to head: "" when the files are the same but
// for digests replaced by digest (the record's), else the first
// difference.
func chartValuesChange(base, head []byte, digest string) string {
	bs, hs := digestRE.Split(string(base), -1), digestRE.Split(string(head), -1)
	bd, hd := digestRE.FindAllString(string(base), -1), digestRE.FindAllString(string(head), -1)
	if len(bs) != len(hs) {
		return "a digest was added or removed"
	}
	for i := range bs {
		if bs[i] != hs[i] {
			return "text other than a digest changed"
		}
	}
	for i := range bd {
		if bd[i] != hd[i] && hd[i] != digest {
			return fmt.Sprintf("digest %s became %s, not the promoted %s", bd[i], hd[i], digest)
		}
	}
	return ""
}
