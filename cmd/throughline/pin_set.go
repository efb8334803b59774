package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/overlay"
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
	// The name package refuses a tag or digest here (":" and "@" are not
	// repository characters, "@" no registry character).
	if _, err := name.NewRepository(n); err != nil {
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
		return &exitcode.InvalidInput{File: app.RelDir(), Err: errors.New("--set edits the images: of a kustomization, and this directory has none (pin without --set rewrites plain manifests)")}
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return err
	}
	k, pf, err := p.readKustomization()
	if err != nil {
		return err
	}
	rel := k.Name()
	used, err := p.usedImageNames(objs, k)
	if err != nil {
		return err
	}
	var added []overlay.NewImage
	// want[i]: the reference containers of sets[i] render after the edit;
	// rendered[i]: whether a rendered container (not only a patch) used it.
	want := make([]string, len(sets))
	rendered := make([]bool, len(sets))
	for i, s := range sets {
		entry := k.Image(s.name)
		renderedName := s.name
		if entry != nil {
			if nn, _ := entry.Field("newName"); nn != "" {
				renderedName = nn
			}
		}
		if !used[s.name] && !used[renderedName] {
			return &exitcode.InvalidInput{File: rel, Err: fmt.Errorf("--set %s: no container of %s uses the image %s (used: %s)", s.name, app.RelDir(), s.name, strings.Join(sortedKeys(used), ", "))}
		}
		value := s.value()
		rendered[i] = rendersImage(objs, s.name) || rendersImage(objs, renderedName)
		if s.newName != "" {
			renderedName = s.newName
		}
		want[i] = renderedName + ":" + value
		if entry != nil && !entry.Block() {
			return &exitcode.InvalidInput{File: rel, Err: fmt.Errorf("images[%d] must be a block mapping for pin to edit it", entry.Index)}
		}
		if entry == nil {
			added = append(added, overlay.NewImage{Name: s.name, NewName: s.newName, NewTag: value})
			pf.changes = append(pf.changes, fmt.Sprintf("%s: images: added %s (--set %s)", rel, s.name, s))
			continue
		}
		if _, ok := entry.Field("digest"); ok {
			return &exitcode.InvalidInput{File: rel, Err: fmt.Errorf("images[%d] %s sets digest:, which pin does not edit; remove it (pin writes newTag: \"TAG@DIGEST\")", entry.Index, s.name)}
		}
		keys := []struct{ key, value string }{{"newTag", value}}
		if s.newName != "" {
			keys = append(keys, struct{ key, value string }{"newName", s.newName})
		}
		for _, kv := range keys {
			if v, ok := entry.Field(kv.key); ok && v == kv.value {
				fmt.Fprintf(stdout, "%s: images[%d] %s: %s %q unchanged\n", rel, entry.Index, s.name, kv.key, kv.value)
				continue
			}
			old, replaced, err := entry.Set(kv.key, kv.value)
			if err != nil {
				return err
			}
			if replaced {
				pf.changes = append(pf.changes, fmt.Sprintf("%s: images[%d] %s: %s %q -> %q (--set)", rel, entry.Index, s.name, kv.key, old, kv.value))
			} else {
				pf.changes = append(pf.changes, fmt.Sprintf("%s: images[%d] %s: %s %q added (--set)", rel, entry.Index, s.name, kv.key, kv.value))
			}
		}
	}
	if err := k.AppendImages(added); err != nil {
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
	for i, w := range want {
		renderedName := overlay.ImageName(w)
		for _, o := range objs {
			for _, c := range render.Containers(o) {
				if c.ImageField != render.ImageString || overlay.ImageName(c.Image) != renderedName {
					continue
				}
				if c.Image != w {
					return fmt.Errorf("after pin --set, %s: %s: %s renders %q, want %q", c.Source, c.Object, c.Path, c.Image, w)
				}
			}
		}
		// A name the render used must still be rendered, now as w: a
		// newName the containers did not follow matches nothing above.
		if rendered[i] && !rendersImage(objs, renderedName) {
			return fmt.Errorf("after pin --set %s, no container of %s renders %q", sets[i], app.RelDir(), w)
		}
	}
	return nil
}

// usedImageNames: the image names (without tag or digest) of every
// container the application renders, and of every container in the patches
// of its own kustomization (a Component's patch reaches its containers only
// when applied to a base).
func (p *pinner) usedImageNames(objs []render.Object, k *overlay.Kustomization) (map[string]bool, error) {
	used := map[string]bool{}
	for _, o := range objs {
		for _, c := range render.Containers(o) {
			if c.ImageField == render.ImageString {
				used[overlay.ImageName(c.Image)] = true
			}
		}
	}
	for _, pt := range k.Patches() {
		data := []byte(pt.Value)
		if !pt.Inline {
			var err error
			if data, err = p.app.FS.ReadFile(filepath.Join(p.app.Dir, filepath.FromSlash(pt.Value))); err != nil {
				return nil, &exitcode.InvalidInput{File: k.Name(), Err: fmt.Errorf("reading patch %s: %w", pt.Value, err)}
			}
		}
		for _, img := range overlay.PatchImages(data) {
			used[overlay.ImageName(img)] = true
		}
	}
	return used, nil
}

// rendersImage reports whether a container of objs has an image named
// name (any tag or digest).
func rendersImage(objs []render.Object, name string) bool {
	for _, o := range objs {
		for _, c := range render.Containers(o) {
			if c.ImageField == render.ImageString && overlay.ImageName(c.Image) == name {
				return true
			}
		}
	}
	return false
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
