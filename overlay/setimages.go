package overlay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// ImageSet is one NAME=[NEWNAME:]TAG@sha256:<hex>: the images: entry of
// Name gets newTag "TAG@sha256:<hex>" (and newName NewName), which
// kustomize renders as NAME:TAG@sha256:<hex> (NEWNAME:TAG@...).
type ImageSet struct {
	Name, NewName, Tag, Digest string
}

// Value is the newTag the set writes: TAG@DIGEST.
func (s ImageSet) Value() string { return s.Tag + "@" + s.Digest }

// String is the set as it is written on the command line.
func (s ImageSet) String() string {
	if s.NewName != "" {
		return s.Name + "=" + s.NewName + ":" + s.Value()
	}
	return s.Name + "=" + s.Value()
}

// ParseImageSet parses and validates NAME=[NEWNAME:]TAG@sha256:<64
// lowercase hex> with go-containerregistry's name package, through the same
// check the policy applies to rendered images (sha256 only).
func ParseImageSet(v string) (ImageSet, error) {
	const want = "want NAME=[NEWNAME:]TAG@sha256:<64 lowercase hex>"
	n, ref, ok := strings.Cut(v, "=")
	if !ok || n == "" || ref == "" {
		return ImageSet{}, fmt.Errorf("%q: %s", v, want)
	}
	// The name package refuses a tag or digest here (":" and "@" are not
	// repository characters, "@" no registry character).
	if _, err := name.NewRepository(n); err != nil {
		return ImageSet{}, fmt.Errorf("%q: NAME %q is not an image name without tag or digest (%s)", v, n, want)
	}
	tag, dig, ok := strings.Cut(ref, "@")
	if !ok {
		return ImageSet{}, fmt.Errorf("%q: %q has no digest; %s", v, ref, want)
	}
	var newName string
	if i := strings.LastIndex(tag, ":"); i > strings.LastIndex(tag, "/") {
		newName, tag = tag[:i], tag[i+1:]
		if _, err := name.NewRepository(newName); err != nil {
			return ImageSet{}, fmt.Errorf("%q: NEWNAME %q: %w", v, newName, err)
		}
		if newName == n {
			newName = ""
		}
	}
	if err := checkTagDigest(v, n, newName, tag, dig, want); err != nil {
		return ImageSet{}, err
	}
	return ImageSet{Name: n, NewName: newName, Tag: tag, Digest: dig}, nil
}

// checkTagDigest validates the tag and digest of the set v of n.
func checkTagDigest(v, n, newName, tag, dig, want string) error {
	if tag == "" {
		return fmt.Errorf("%q: no tag before the digest (kustomize's newTag carries TAG@DIGEST); %s", v, want)
	}
	if strings.ContainsAny(tag, "/:") {
		return fmt.Errorf("%q: TAG %q is not an image tag; %s", v, tag, want)
	}
	if _, err := name.NewTag(n + ":" + tag); err != nil {
		return fmt.Errorf("%q: tag %q: %w", v, tag, err)
	}
	if _, err := name.NewDigest(n + "@" + dig); err != nil {
		return fmt.Errorf("%q: digest %q: %w", v, dig, err)
	}
	rendered := n
	if newName != "" {
		rendered = newName
	}
	if _, err := policy.CheckImage(rendered + ":" + tag + "@" + dig); err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	if dig != strings.ToLower(dig) {
		return fmt.Errorf("%q: digest %q is not lowercase hex; %s", v, dig, want)
	}
	return nil
}

// SetReport is what SetImages said and did, in order: each key that
// already had its value, then each edit written (none when nothing was
// written).
type SetReport struct {
	Unchanged []string
	Changes   []string
}

// setWant is what a set must render after the edit: Image, the reference
// every container of its rendered name carries, and whether a rendered
// container (not only a patch) used the name before.
type setWant struct {
	Set      ImageSet
	Image    string
	Rendered bool
}

// SetImages writes every set into the images: of the application's own
// kustomization (opts is the application), without asking any registry,
// then renders again to prove that every container of each name carries
// the set reference. The report is never nil: what was said before an
// error stays said.
func SetImages(ctx context.Context, opts render.Options, sets []ImageSet) (*SetReport, error) {
	rep := &SetReport{}
	p := &Pin{opts: opts}
	app, err := render.Open(ctx, opts)
	if err != nil {
		return rep, err
	}
	p.App = app
	if app.Mode != render.ModeKustomize {
		return rep, exitcode.InvalidFile(app.RelDir(),
			errors.New("--set edits the images: of a kustomization, and this directory has none (pin without --set rewrites plain manifests)"))
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return rep, err
	}
	wants, err := p.planSets(objs, sets, rep)
	if err != nil {
		return rep, err
	}
	if rep.Changes, err = p.write(); err != nil {
		return rep, err
	}
	again, err := render.Open(ctx, opts)
	if err != nil {
		return rep, fmt.Errorf("rendering %s after pin --set: %w", app.RelDir(), err)
	}
	if objs, err = again.Build(ctx); err != nil {
		return rep, fmt.Errorf("rendering %s after pin --set: %w", app.RelDir(), err)
	}
	return rep, proveSets(objs, wants, app.RelDir())
}

// planSets plans the edit of every set in the application's kustomization
// (objs is its render before the edit) and returns what each must render.
func (p *Pin) planSets(objs []render.Object, sets []ImageSet, rep *SetReport) ([]setWant, error) {
	k, pf, err := p.readKustomization()
	if err != nil {
		return nil, err
	}
	rel := k.Name()
	used, err := p.usedImageNames(objs, k)
	if err != nil {
		return nil, err
	}
	var added []NewImage
	wants := make([]setWant, len(sets))
	for i, s := range sets {
		entry := k.Image(s.Name)
		renderedName := s.Name
		if entry != nil {
			if nn, _ := entry.Field("newName"); nn != "" {
				renderedName = nn
			}
		}
		if !used[s.Name] && !used[renderedName] {
			return nil, exitcode.InvalidFile(rel, fmt.Errorf("--set %s: no container of %s uses the image %s (used: %s)",
				s.Name, p.App.RelDir(), s.Name, strings.Join(sortedKeys(used), ", ")))
		}
		wants[i] = setWant{Set: s, Rendered: rendersImage(objs, s.Name) || rendersImage(objs, renderedName)}
		if s.NewName != "" {
			renderedName = s.NewName
		}
		wants[i].Image = renderedName + ":" + s.Value()
		if entry == nil {
			added = append(added, NewImage{Name: s.Name, NewName: s.NewName, NewTag: s.Value()})
			pf.changes = append(pf.changes, fmt.Sprintf("%s: images: added %s (--set %s)", rel, s.Name, s))
			continue
		}
		if err := setEntry(rel, entry, s, pf, rep); err != nil {
			return nil, err
		}
	}
	return wants, k.AppendImages(added)
}

// setEntry writes the set s into the existing images: entry of the
// kustomization rel.
func setEntry(rel string, entry *ImageEntry, s ImageSet, pf *pinFile, rep *SetReport) error {
	if !entry.Block() {
		return exitcode.InvalidFile(rel, fmt.Errorf("images[%d] must be a block mapping for pin to edit it", entry.Index))
	}
	if _, ok := entry.Field("digest"); ok {
		return exitcode.InvalidFile(rel, fmt.Errorf("images[%d] %s sets digest:, which pin does not edit; remove it (pin writes newTag: \"TAG@DIGEST\")",
			entry.Index, s.Name))
	}
	keys := []struct{ key, value string }{{"newTag", s.Value()}}
	if s.NewName != "" {
		keys = append(keys, struct{ key, value string }{"newName", s.NewName})
	}
	for _, kv := range keys {
		if v, ok := entry.Field(kv.key); ok && v == kv.value {
			rep.Unchanged = append(rep.Unchanged, fmt.Sprintf("%s: images[%d] %s: %s %q unchanged", rel, entry.Index, s.Name, kv.key, kv.value))
			continue
		}
		old, replaced, err := entry.Set(kv.key, kv.value)
		if err != nil {
			return err
		}
		if replaced {
			pf.changes = append(pf.changes, fmt.Sprintf("%s: images[%d] %s: %s %q -> %q (--set)", rel, entry.Index, s.Name, kv.key, old, kv.value))
		} else {
			pf.changes = append(pf.changes, fmt.Sprintf("%s: images[%d] %s: %s %q added (--set)", rel, entry.Index, s.Name, kv.key, kv.value))
		}
	}
	return nil
}

// proveSets is the proof after the edit, on the application (dir) rendered
// again as objs: every container of a set's rendered name carries the set
// reference, and a name a rendered container used is still rendered, now
// as the set reference (a newName the containers did not follow matches no
// container of the new name). A committed Acceptance (the Flux setup) is no
// workload: its containers declare the render it was written for, until
// render --write-acceptance refreshes it after the pin.
func proveSets(objs []render.Object, wants []setWant, dir string) error {
	for _, w := range wants {
		renderedName := ImageName(w.Image)
		for _, o := range objs {
			if acceptance.IsAcceptance(o) {
				continue
			}
			for _, c := range render.Containers(o) {
				if c.ImageField != render.ImageString || ImageName(c.Image) != renderedName {
					continue
				}
				if c.Image != w.Image {
					return fmt.Errorf("after pin --set, %s: %s: %s renders %q, want %q", c.Source, c.Object, c.Path, c.Image, w.Image)
				}
			}
		}
		if w.Rendered && !rendersImage(objs, renderedName) {
			return fmt.Errorf("after pin --set %s, no container of %s renders %q", w.Set, dir, w.Image)
		}
	}
	return nil
}

// usedImageNames: the image names (without tag or digest) of every
// container the application renders, and of every container in the patches
// of its own kustomization (a Component's patch reaches its containers only
// when applied to a base).
func (p *Pin) usedImageNames(objs []render.Object, k *Kustomization) (map[string]bool, error) {
	used := map[string]bool{}
	for _, o := range objs {
		for _, c := range render.Containers(o) {
			if c.ImageField == render.ImageString {
				used[ImageName(c.Image)] = true
			}
		}
	}
	for _, pt := range k.Patches() {
		data := []byte(pt.Value)
		if !pt.Inline {
			var err error
			if data, err = p.App.FS.ReadFile(filepath.Join(p.App.Dir, filepath.FromSlash(pt.Value))); err != nil {
				return nil, exitcode.InvalidFile(k.Name(), fmt.Errorf("reading patch %s: %w", pt.Value, err))
			}
		}
		for _, img := range PatchImages(data) {
			used[ImageName(img)] = true
		}
	}
	return used, nil
}

// rendersImage reports whether a container of objs has an image named
// name (any tag or digest).
func rendersImage(objs []render.Object, name string) bool {
	for _, o := range objs {
		for _, c := range render.Containers(o) {
			if c.ImageField == render.ImageString && ImageName(c.Image) == name {
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
