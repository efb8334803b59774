package gate

import (
	"context"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/render"
)

// kustomizationChanges lists the top-level keys of the kustomization kfile
// that differ between the two trees, the images: digests (a newTag
// "tag@digest", whose tag is informative only, and digest:) left out.
func kustomizationChanges(ctx context.Context, bt, ht *gitops.Tree, kfile string) []string {
	if ctx.Err() != nil {
		return []string{"<cancelled>"}
	}
	a, b := loadKustomization(bt, kfile), loadKustomization(ht, kfile)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// loadKustomization reads the kustomization at file with its images:
// digests and its helmCharts versions masked (nil when it cannot be read).
func loadKustomization(tree *gitops.Tree, file string) map[string]any {
	data, err := tree.OptionalFile(file)
	if err != nil || data == nil {
		return nil
	}
	var m map[string]any
	if sigyaml.Unmarshal(data, &m) != nil {
		return map[string]any{"<unparseable>": string(data)}
	}
	imgs, _ := m["images"].([]any)
	for _, e := range imgs {
		em, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if nt, ok := em["newTag"].(string); ok && strings.Contains(nt, "@") {
			// The tag before a digest is informative only.
			em["newTag"] = "<tag>@<digest>"
		}
		if _, ok := em["digest"]; ok {
			em["digest"] = "<digest>"
		}
	}
	maskChartVersions(m)
	return m
}

// crossing is an after-object that names another environment.
type crossing struct {
	object string // the object's ID
	text   string // "<object> names <env> (<value>)"
}

// crossEnvironment lists the after-objects that name another environment
// (a sibling overlay of target in tree) in their namespace or a routing
// host, where the before-objects did not.
func crossEnvironment(ctx context.Context, tree *gitops.Tree, target, env string, before, after []render.Object) []crossing {
	dirs, err := tree.Subdirs(path.Dir(target))
	if err != nil || ctx.Err() != nil {
		return nil
	}
	var others []string
	for _, d := range dirs {
		if d != env && len(d) > 2 {
			others = append(others, d)
		}
	}
	was := mentions(before, others)
	var out []crossing
	for k, id := range mentions(after, others) {
		if _, ok := was[k]; !ok {
			out = append(out, crossing{object: id, text: k})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].text < out[j].text })
	return out
}

// mentions maps "<object> names <env> (<value>)" to the object's ID for
// every object of objs whose namespace or a routing host names one of envs.
// A Secret is judged by its namespace only: its values are never quoted.
func mentions(objs []render.Object, envs []string) map[string]string {
	m := map[string]string{}
	for _, o := range objs {
		id := o.ID()
		vals := []string{id.Namespace}
		if !policy.IsSecret(id) {
			vals = append(vals, routingHosts(o.Map)...)
		}
		for _, v := range vals {
			for _, tok := range strings.FieldsFunc(v, func(r rune) bool { return r == '-' || r == '.' || r == '/' }) {
				for _, other := range envs {
					if tok == other {
						m[id.String()+" names "+other+" ("+v+")"] = id.String()
					}
				}
			}
		}
	}
	return m
}

// routingHosts collects every host / hostname / hostnames / hosts value
// of an object.
func routingHosts(v any) []string {
	var out []string
	var walk func(any, string)
	walk = func(v any, key string) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				walk(x, k)
			}
		case []any:
			for _, x := range t {
				walk(x, key)
			}
		case string:
			if key == "host" || key == "hostname" || key == "hostnames" || key == "hosts" {
				out = append(out, t)
			}
		}
	}
	walk(v, "")
	return out
}

// driftOf checks the drift records of the artifact's repository (files
// under drift/ in tree, plus the given files) offline against each other
// and against the record's digest: a tag seen at two digests, or a tag of
// the artifact that resolved to another digest, moved.
func driftOf(ctx context.Context, tree *gitops.Tree, extra []string, rec *promotion.Record) []Finding {
	var out []Finding
	add := func(rule, file, format string, args ...any) {
		out = append(out, Finding{Rule: rule, File: file, Reason: fmt.Sprintf(format, args...)})
	}
	// The drift records committed under drift/ (read through the tree's
	// confined reader), then the local files the CLI names.
	type source struct {
		name string
		read func() ([]byte, error)
	}
	var files []source
	committed, err := tree.Files("drift")
	if err != nil {
		add(RuleDriftRecord, "drift", "drift records: %v", err)
	}
	for _, f := range committed {
		if strings.HasSuffix(f, ".json") || strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".yml") {
			files = append(files, source{f, func() ([]byte, error) { return tree.OptionalFile(f) }})
		}
	}
	for _, f := range extra {
		files = append(files, source{f, func() ([]byte, error) { return registry.ReadRecordBytes(f) }})
	}
	pinned, err := policy.CheckImage(rec.Artifact.Image)
	if err != nil {
		add(RuleDigest, "", "artifact.image %q: %v", rec.Artifact.Image, err)
		return out
	}
	var records []registry.SourcedRecord
	for _, src := range files {
		name := src.name
		data, err := src.read()
		if err != nil {
			add(RuleDriftRecord, name, "drift record %s: %v", name, err)
			continue
		}
		rr, err := registry.ParseRecord(name, data)
		if err != nil {
			add(RuleDriftRecord, name, "%s", err.Error())
			continue
		}
		if rr.Repository != pinned.Repository {
			continue
		}
		records = append(records, registry.SourcedRecord{Record: rr, File: name})
		if pinned.Tag != "" && rr.Tag == pinned.Tag && rr.Digest != rec.Artifact.Digest {
			add(RuleMovedTag, name, "moved tag: %s resolved to %s (%s at %s), the artifact is %s",
				rr.Reference, rr.Digest, name, rr.ResolvedAt.Format(time.RFC3339), rec.Artifact.Digest)
		}
	}
	for _, d := range registry.CheckDrift(ctx, records, nil).Drifts {
		add(RuleMovedTag, "", "moved tag: %s", d.Error())
	}
	return out
}
