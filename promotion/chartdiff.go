package promotion

import (
	"sort"

	"github.com/throughline-dev/throughline/render"
)

// ChartID is the identity a chart's Change names: Kind Chart of group
// helm.sh, named after the chart (its source in Namespace's place is not
// used: a chart is one per name in a render).
func ChartID(name string) render.ID {
	return render.ID{Group: "helm.sh", Version: "v2", Kind: "Chart", Name: name}
}

// ClassifyCharts compares the charts a target renders before and after a
// change, by name: a changed version, digest, source or values schema, an
// added or a removed chart is an artifact change (the chart is promoted as
// the image is).
func ClassifyCharts(before, after []Chart) []Change {
	by := func(cs []Chart) map[string]Chart {
		m := map[string]Chart{}
		for _, c := range cs {
			m[c.Name] = c
		}
		return m
	}
	bm, am := by(before), by(after)
	var out []Change
	for name, b := range bm {
		a, ok := am[name]
		if !ok {
			out = append(out, Change{Class: ClassArtifact, Object: ChartID(name), Op: "removed"})
			continue
		}
		for _, f := range []struct{ field, x, y string }{
			{"version", b.Version, a.Version}, {"digest", b.Digest, a.Digest}, {"source", b.Source, a.Source},
			{"valuesSchema.digest", schemaDigest(b), schemaDigest(a)},
		} {
			if f.x != f.y {
				out = append(out, Change{Class: ClassArtifact, Object: ChartID(name), Field: f.field, Before: orNone(f.x), After: orNone(f.y), Op: "changed"})
			}
		}
	}
	for name := range am {
		if _, ok := bm[name]; !ok {
			out = append(out, Change{Class: ClassArtifact, Object: ChartID(name), Op: "added"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Object.Name != out[j].Object.Name {
			return out[i].Object.Name < out[j].Object.Name
		}
		return out[i].Field < out[j].Field
	})
	return out
}

func schemaDigest(c Chart) string {
	if c.ValuesSchema == nil {
		return ""
	}
	return c.ValuesSchema.Digest
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
