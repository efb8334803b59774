package gate

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/render"
)

// overlayKey is one app's overlay path in one environment.
type overlayKey struct{ env, app, path string }

// rendered is one overlay's render at one revision.
type rendered struct {
	objs []render.Object
	hash string
	// checks is the overlay's runtime checks file (render.ChecksFile), nil
	// when it has none: the bar the environment judges a release by, which
	// the render carries only in the Acceptance.
	checks []byte
}

// objects are r's objects (none for a nil r: no overlay at that revision).
func (r *rendered) objects() []render.Object {
	if r == nil {
		return nil
	}
	return r.objs
}

// revision is one revision's files and the renders of its registered
// overlays.
type revision struct {
	// files are every file of the revision, GitOps-root-relative.
	files    []string
	overlays map[overlayKey]*rendered
	// byPath is the render of each overlay path.
	byPath map[string]*rendered
}

// load lists the files of t and renders every overlay the registry
// claims: each directory with a kustomization that an environment's paths
// or explicit apps name.
func (c *repoCheck) load(ctx context.Context, t *gitops.Tree) (*revision, error) {
	files, err := c.r.ListTree(ctx, t.Rev, ".")
	if err != nil {
		return nil, err
	}
	rv := &revision{files: files, overlays: map[overlayKey]*rendered{}, byPath: map[string]*rendered{}}
	names := konfig.RecognizedKustomizationFileNames()
	for _, f := range files {
		dir := path.Dir(f)
		if !slices.Contains(names, path.Base(f)) || rv.byPath[dir] != nil {
			continue
		}
		app, env, _, ok := c.reg.Locate(dir)
		if !ok {
			continue
		}
		objs, hash, err := t.Render(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("rendering %s (app %s, environment %s) at %s: %w", dir, app, env, t.Rev, err)
		}
		checks, err := t.OptionalFile(path.Join(dir, render.ChecksFile))
		if err != nil {
			return nil, err
		}
		rd := &rendered{objs: objs, hash: hash, checks: checks}
		rv.overlays[overlayKey{env: env, app: app, path: dir}] = rd
		rv.byPath[dir] = rd
	}
	return rv, nil
}

// checksChange says how the runtime checks file changed from b to h
// ("changed", "added", "removed"; "" when it did not).
func checksChange(b, h *rendered) string {
	var before, after []byte
	if b != nil {
		before = b.checks
	}
	if h != nil {
		after = h.checks
	}
	switch {
	case bytes.Equal(before, after):
		return ""
	case before == nil:
		return "added"
	case after == nil:
		return "removed"
	}
	return "changed"
}

// overlayKeys are the overlays of env at either revision, sorted by path.
func overlayKeys(base, head *revision, env string) []overlayKey {
	seen := map[overlayKey]bool{}
	var out []overlayKey
	for _, rv := range []*revision{base, head} {
		for k := range rv.overlays {
			if k.env == env && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// duplicates finds every object (group, kind, namespace, name) that two
// overlay paths render on one cluster at rv.
func duplicates(reg *environment.Registry, rv *revision) []Finding {
	keys := make([]overlayKey, 0, len(rv.overlays))
	for k := range rv.overlays {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].path < keys[j].path })
	type where struct {
		id      render.ID
		cluster string
		by      []overlayKey
	}
	seen := map[string]*where{}
	var order []string
	for _, k := range keys {
		env, _ := reg.Get(k.env)
		cluster := env.ClusterName()
		for _, o := range rv.overlays[k].objs {
			id := o.ID()
			key := strings.Join([]string{cluster, id.Group, id.Kind, id.Namespace, id.Name}, "\x00")
			w := seen[key]
			if w == nil {
				w = &where{id: id, cluster: cluster}
				seen[key] = w
				order = append(order, key)
			}
			w.by = append(w.by, k)
		}
	}
	var out []Finding
	for _, key := range order {
		w := seen[key]
		if len(w.by) < 2 {
			continue
		}
		var by []string
		for _, k := range w.by {
			by = append(by, fmt.Sprintf("%s (app %s, environment %s)", k.path, k.app, k.env))
		}
		out = append(out, Finding{Rule: RuleDuplicate, Environment: w.by[0].env, File: w.by[0].path, Object: w.id.String(),
			Reason: fmt.Sprintf("%s is rendered on cluster %s by %d overlays: %s: one object has one owner", w.id, w.cluster, len(w.by),
				strings.Join(by, " and "))})
	}
	return out
}
