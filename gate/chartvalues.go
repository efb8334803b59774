package gate

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/render"
)

// DigestRE is a digest as it appears in a value file.
var DigestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// ChartValueFiles are the value files of the chart app at appPath that lie
// inside its directory, relative to the repository root, as its
// throughline-helm.yaml lists them (a value file shared with other
// environments is never a promotion's to edit).
func ChartValueFiles(tree *gitops.Tree, appPath string) ([]string, error) {
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

// chartValuesChange reports what else than a promotion changed in a chart
// app's value file from base to head: "" when the files are the same but
// for digests replaced by digest (the record's), else the first
// difference.
func chartValuesChange(base, head []byte, digest string) string {
	bs, hs := DigestRE.Split(string(base), -1), DigestRE.Split(string(head), -1)
	bd, hd := DigestRE.FindAllString(string(base), -1), DigestRE.FindAllString(string(head), -1)
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
