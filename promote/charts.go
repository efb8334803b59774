package promote

import (
	"fmt"
	"path"
	"slices"
	"strings"

	yaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/promotion"
)

// chartEdit is the target's chart pins written for the promoted charts:
// the chart versions of its kustomization (helmCharts) or Chart.yaml
// (dependencies) and the lock file beside it.
type chartEdit struct {
	kdata            []byte
	lockFile         string
	lockData         []byte
	kchanged, locked bool
}

// writeCharts writes the version of every remote chart of charts into the
// entries of the target file kfile (data) that name its repository and
// name (a kustomization's helmCharts, a chart app's Chart.yaml
// dependencies: gate.ChartListOf), and pins each such version to the chart's
// digest in the lock file beside kfile, as `pin --charts` writes it (in
// place). A lock that pins that version to another digest is refused (rule
// chart-version-moved, naming both digests).
func writeCharts(tree *gitops.Tree, kfile string, data []byte, charts []promotion.Chart) (*chartEdit, error) {
	e := &chartEdit{kdata: data}
	f, err := overlay.Parse(kfile, data)
	if err != nil {
		return nil, err
	}
	list := gate.ChartListOf(kfile)
	var pins []chartsource.Entry
	if docs := f.Documents(); len(docs) == 1 && len(docs[0].Content) == 1 {
		for _, entry := range seqOf(docs[0].Content[0], list.Seq) {
			name, repo, version := scalarOf(entry, "name"), scalarOf(entry, list.Repo), scalarOf(entry, "version")
			if name == nil || repo == nil || version == nil {
				continue
			}
			i := slices.IndexFunc(charts, func(c promotion.Chart) bool {
				return gate.RemoteChart(c) && c.Name == name.Value && strings.TrimSuffix(c.Source, "/") == strings.TrimSuffix(repo.Value, "/")
			})
			if i < 0 {
				continue
			}
			c := charts[i]
			if version.Value != c.Version {
				if err := f.Replace(version, c.Version); err != nil {
					return nil, exitcode.InvalidFile(kfile, err)
				}
			}
			pins = append(pins, chartsource.Entry{Repo: repo.Value, Name: c.Name, Version: c.Version, Digest: c.Digest})
		}
	}
	if f.Edited() {
		if e.kdata, err = f.Bytes(); err != nil {
			return nil, err
		}
		e.kchanged = true
	}
	if len(pins) == 0 {
		return e, nil
	}
	e.lockFile = chartsource.LockPath(path.Dir(kfile))
	old, err := tree.OptionalFile(e.lockFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", e.lockFile, err)
	}
	out, changes, err := chartsource.UpdateLock(e.lockFile, old, pins)
	if err != nil {
		return nil, err
	}
	e.lockData, e.locked = out, len(changes) > 0
	return e, nil
}

// seqOf is the items of the block sequence at key of mapping m.
func seqOf(m *yaml.Node, key string) []*yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.SequenceNode {
			return m.Content[i+1].Content
		}
	}
	return nil
}

// scalarOf is the scalar at key of mapping m (nil when absent).
func scalarOf(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1]
		}
	}
	return nil
}
