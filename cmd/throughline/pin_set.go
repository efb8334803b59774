package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// imageSet is one --set NAME=[NEWNAME:]TAG@sha256:<hex>: the images: entry
// of NAME gets newTag "TAG@sha256:<hex>" (and newName NEWNAME), which
// kustomize renders as NAME:TAG@sha256:<hex> (NEWNAME:TAG@...).
type imageSet struct {
	name, newName, tag, digest string
}

func (s imageSet) value() string { return s.tag + "@" + s.digest }

func (s imageSet) String() string {
	if s.newName != "" {
		return s.name + "=" + s.newName + ":" + s.value()
	}
	return s.name + "=" + s.value()
}

// parseImageSet parses and validates NAME=TAG@sha256:<64 lowercase hex>
// with go-containerregistry's name package, through the same check the
// policy applies to rendered images (sha256 only).
func parseImageSet(v string) (imageSet, error) {
	const want = "want NAME=[NEWNAME:]TAG@sha256:<64 lowercase hex>"
	n, ref, ok := strings.Cut(v, "=")
	if !ok || n == "" || ref == "" {
		return imageSet{}, fmt.Errorf("%q: %s", v, want)
	}
	if _, err := name.NewRepository(n); err != nil || strings.ContainsAny(n, "@") || strings.Contains(n[strings.LastIndex(n, "/")+1:], ":") {
		return imageSet{}, fmt.Errorf("%q: NAME %q is not an image name without tag or digest (%s)", v, n, want)
	}
	tag, dig, ok := strings.Cut(ref, "@")
	if !ok {
		return imageSet{}, fmt.Errorf("%q: %q has no digest; %s", v, ref, want)
	}
	var newName string
	if i := strings.LastIndex(tag, ":"); i > strings.LastIndex(tag, "/") {
		newName, tag = tag[:i], tag[i+1:]
		if _, err := name.NewRepository(newName); err != nil {
			return imageSet{}, fmt.Errorf("%q: NEWNAME %q: %w", v, newName, err)
		}
		if newName == n {
			newName = ""
		}
	}
	if tag == "" {
		return imageSet{}, fmt.Errorf("%q: no tag before the digest (kustomize's newTag carries TAG@DIGEST); %s", v, want)
	}
	if strings.ContainsAny(tag, "/:") {
		return imageSet{}, fmt.Errorf("%q: TAG %q is not an image tag; %s", v, tag, want)
	}
	if _, err := name.NewTag(n + ":" + tag); err != nil {
		return imageSet{}, fmt.Errorf("%q: tag %q: %w", v, tag, err)
	}
	if _, err := name.NewDigest(n + "@" + dig); err != nil {
		return imageSet{}, fmt.Errorf("%q: digest %q: %w", v, dig, err)
	}
	rendered := n
	if newName != "" {
		rendered = newName
	}
	if _, err := policy.CheckImage(rendered + ":" + tag + "@" + dig); err != nil {
		return imageSet{}, fmt.Errorf("%q: %w", v, err)
	}
	if dig != strings.ToLower(dig) {
		return imageSet{}, fmt.Errorf("%q: digest %q is not lowercase hex; %s", v, dig, want)
	}
	return imageSet{name: n, newName: newName, tag: tag, digest: dig}, nil
}

// imageSetFlag is the repeatable --set flag; each value is validated when
// the flag is parsed, so a malformed one is a usage error naming --set.
type imageSetFlag struct{ sets []imageSet }

func (f *imageSetFlag) String() string {
	var s []string
	for _, v := range f.sets {
		s = append(s, v.String())
	}
	return strings.Join(s, ",")
}

func (f *imageSetFlag) Set(v string) error {
	s, err := parseImageSet(v)
	if err != nil {
		return err
	}
	for _, prev := range f.sets {
		if prev.name == s.name {
			return fmt.Errorf("%q: %s is already set (%s)", v, s.name, prev)
		}
	}
	f.sets = append(f.sets, s)
	return nil
}

func (f *imageSetFlag) Type() string { return "NAME=[NEWNAME:]TAG@DIGEST" }

// runSet writes every --set into the images: of the application's own
// kustomization, without asking any registry, then renders again to prove
// that every container of each name carries the set reference.
func (p *pinner) runSet(ctx context.Context, sets []imageSet, stdout io.Writer) error {
	app, err := render.Open(ctx, render.Options{Root: p.root, Path: p.path})
	if err != nil {
		return err
	}
	p.app = app
	if app.Mode != render.ModeKustomize {
		return &render.InputError{File: app.RelDir(), Err: errors.New("--set edits the images: of a kustomization, and this directory has none (pin without --set rewrites plain manifests)")}
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return err
	}
	rel := app.Kustomizations[0].File
	f, err := readDocs(filepath.Join(app.FS.Root(), filepath.FromSlash(rel)), rel)
	if err != nil {
		return err
	}
	p.files = []*pinFile{f}
	if len(f.docs) != 1 || len(f.docs[0].Content) != 1 || f.docs[0].Content[0].Kind != kyaml.MappingNode {
		return &render.InputError{File: rel, Err: errors.New("a kustomization must be one YAML mapping")}
	}
	root := f.docs[0].Content[0]
	imagesKey, images := mapLookup(root, "images")
	if images != nil && (images.Kind != kyaml.SequenceNode || images.Style&kyaml.FlowStyle != 0) {
		return &render.InputError{File: rel, Err: errors.New("images: must be a block sequence for pin to edit it (write it one entry per line)")}
	}

	used, err := p.usedImageNames(objs, root)
	if err != nil {
		return err
	}
	var added []imageEntry
	for _, s := range sets {
		entry, idx := entryByName(images, s.name)
		renderedName := s.name
		if entry != nil {
			if _, nn := mapLookup(entry, "newName"); nn != nil && nn.Value != "" {
				renderedName = nn.Value
			}
		}
		if !used[s.name] && !used[renderedName] {
			return &render.InputError{File: rel, Err: fmt.Errorf("--set %s: no container of %s uses the image %s (used: %s)", s.name, app.RelDir(), s.name, strings.Join(sortedKeys(used), ", "))}
		}
		value := s.value()
		if entry != nil && (entry.Style&kyaml.FlowStyle != 0 || entry.Kind != kyaml.MappingNode) {
			return &render.InputError{File: rel, Err: fmt.Errorf("images[%d] must be a block mapping for pin to edit it", idx)}
		}
		if entry == nil {
			added = append(added, imageEntry{name: s.name, newName: s.newName, value: value})
			f.changes = append(f.changes, fmt.Sprintf("%s: images: added %s (--set %s)", rel, s.name, s))
			continue
		}
		if _, d := mapLookup(entry, "digest"); d != nil {
			return &render.InputError{File: rel, Err: fmt.Errorf("images[%d] %s sets digest:, which pin does not edit; remove it (pin writes newTag: \"TAG@DIGEST\")", idx, s.name)}
		}
		keys := []struct{ key, value string }{{"newTag", value}}
		if s.newName != "" {
			keys = append(keys, struct{ key, value string }{"newName", s.newName})
		}
		for _, kv := range keys {
			_, node := mapLookup(entry, kv.key)
			switch {
			case node != nil && node.Value == kv.value:
				fmt.Fprintf(stdout, "%s: images[%d] %s: %s %q unchanged\n", rel, idx, s.name, kv.key, kv.value)
			case node != nil:
				if err := f.replace(node, kv.value); err != nil {
					return err
				}
				f.changes = append(f.changes, fmt.Sprintf("%s: images[%d] %s: %s %q -> %q (--set)", rel, idx, s.name, kv.key, node.Value, kv.value))
				node.Value, node.Tag = kv.value, "!!str"
			default:
				if err := f.insertKey(entry, kv.key, kv.value); err != nil {
					return err
				}
				f.changes = append(f.changes, fmt.Sprintf("%s: images[%d] %s: %s %q added (--set)", rel, idx, s.name, kv.key, kv.value))
			}
		}
	}
	if err := f.appendImageEntries(root, imagesKey, images, added); err != nil {
		return err
	}
	changes, err := p.write()
	if err != nil {
		return err
	}
	for _, ch := range changes {
		if _, err := fmt.Fprintln(stdout, ch); err != nil {
			return err
		}
	}
	// The proof: render again; every container of a set name carries the
	// set reference.
	again, err := render.Open(ctx, render.Options{Root: p.root, Path: p.path})
	if err != nil {
		return fmt.Errorf("rendering %s after pin --set: %w", app.RelDir(), err)
	}
	objs, err = again.Build(ctx)
	if err != nil {
		return fmt.Errorf("rendering %s after pin --set: %w", app.RelDir(), err)
	}
	for _, s := range sets {
		entry, _ := entryByName(images, s.name)
		renderedName := s.name
		if _, nn := mapLookup(entry, "newName"); nn != nil && nn.Value != "" {
			renderedName = nn.Value
		}
		if s.newName != "" {
			renderedName = s.newName
		}
		want := renderedName + ":" + s.value()
		for _, o := range objs {
			for _, c := range render.Containers(o) {
				if c.ImageField != render.ImageString || imageName(c.Image) != renderedName {
					continue
				}
				if c.Image != want {
					return fmt.Errorf("after pin --set, %s: %s: %s renders %q, want %q", c.Source, c.Object, c.Path, c.Image, want)
				}
			}
		}
	}
	return nil
}

// usedImageNames: the image names (without tag or digest) of every
// container the application renders, and of every container in the patches
// of its own kustomization (a Component's patch reaches its containers only
// when applied to a base).
func (p *pinner) usedImageNames(objs []render.Object, kust *kyaml.Node) (map[string]bool, error) {
	used := map[string]bool{}
	for _, o := range objs {
		for _, c := range render.Containers(o) {
			if c.ImageField == render.ImageString {
				used[imageName(c.Image)] = true
			}
		}
	}
	rel := p.app.Kustomizations[0].File
	var patches []string // file paths or inline patches
	inline := map[int]bool{}
	if _, ps := mapLookup(kust, "patches"); ps != nil {
		for _, e := range ps.Content {
			if _, path := mapLookup(e, "path"); path != nil {
				patches = append(patches, path.Value)
			} else if _, patch := mapLookup(e, "patch"); patch != nil {
				inline[len(patches)] = true
				patches = append(patches, patch.Value)
			}
		}
	}
	if _, ps := mapLookup(kust, "patchesStrategicMerge"); ps != nil {
		for _, e := range ps.Content {
			if strings.Contains(e.Value, "\n") {
				inline[len(patches)] = true
			}
			patches = append(patches, e.Value)
		}
	}
	for i, pt := range patches {
		data := []byte(pt)
		if !inline[i] {
			var err error
			if data, err = p.app.FS.ReadFile(filepath.Join(p.app.Dir, filepath.FromSlash(pt))); err != nil {
				return nil, &render.InputError{File: rel, Err: fmt.Errorf("reading patch %s: %w", pt, err)}
			}
		}
		dec := kyaml.NewDecoder(bytes.NewReader(data))
		for {
			var n kyaml.Node
			if err := dec.Decode(&n); err != nil {
				break // a JSON 6902 patch or the end: no containers to find
			}
			visit := func(_ string, img *kyaml.Node) {
				if img.Kind == kyaml.ScalarNode {
					used[imageName(img.Value)] = true
				}
			}
			walkContainerImages(&n, "", visit)
			jsonPatchImages(&n, visit)
		}
	}
	return used, nil
}

// jsonPatchImages visits the images a JSON 6902 patch adds or replaces: a
// container added to a containers list, or an image field itself.
func jsonPatchImages(doc *kyaml.Node, visit func(string, *kyaml.Node)) {
	ops := doc
	if ops.Kind == kyaml.DocumentNode && len(ops.Content) == 1 {
		ops = ops.Content[0]
	}
	if ops.Kind != kyaml.SequenceNode {
		return
	}
	for _, op := range ops.Content {
		_, path := mapLookup(op, "path")
		_, value := mapLookup(op, "value")
		if path == nil || value == nil {
			continue
		}
		parts := strings.Split(path.Value, "/")
		switch {
		case parts[len(parts)-1] == "image":
			visit(path.Value, value)
		case len(parts) >= 2 && isContainerList(parts[len(parts)-2]):
			if _, img := mapLookup(value, "image"); img != nil {
				visit(path.Value+"/image", img)
			}
		case len(parts) >= 1 && isContainerList(parts[len(parts)-1]) && value.Kind == kyaml.SequenceNode:
			for _, c := range value.Content {
				if _, img := mapLookup(c, "image"); img != nil {
					visit(path.Value, img)
				}
			}
		default:
			walkContainerImages(value, path.Value, visit)
		}
	}
}

// imageName strips the digest and the tag from an image reference, the way
// kustomize's images: name matches it.
func imageName(image string) string {
	image, _, _ = strings.Cut(image, "@")
	n, _ := splitImage(image)
	return n
}

// entryByName finds the images: entry whose name: is n (the key kustomize
// edit set image uses).
func entryByName(images *kyaml.Node, n string) (*kyaml.Node, int) {
	if images == nil {
		return nil, -1
	}
	for i, e := range images.Content {
		if _, v := mapLookup(e, "name"); v != nil && v.Value == n {
			return e, i
		}
	}
	return nil, -1
}

func sortedKeys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}
