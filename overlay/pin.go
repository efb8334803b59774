package overlay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/render"
)

// RuleUnpinned is the rule of the refusals about images not pinned by
// digest.
const RuleUnpinned = "unpinned-image"

// Unpinned is one container image that is not pinned by digest.
type Unpinned struct {
	// Source is the file, Object the object and Field the image field.
	Source, Object, Field string
	Image                 string
	// Name and Tag as kustomize splits the image (Tag "" when none).
	Name, Tag string
}

// String is the image as pin --check lists it.
func (u Unpinned) String() string {
	return fmt.Sprintf("%s: %s: %s %q is not pinned by digest", u.Source, u.Object, u.Field, u.Image)
}

// Allowed is one container image not pinned by digest that the allow-list
// lets through in the environment: render accepts it, pin leaves it.
type Allowed struct {
	Unpinned
	// Entry is the allow-list entry that matched.
	Entry policy.AllowedImage
}

// String is the image as pin --check lists it.
func (a Allowed) String() string {
	return fmt.Sprintf("%s: %s: %s %q is allowed by the allow-list pattern %q (%s)",
		a.Source, a.Object, a.Field, a.Image, a.Entry.Pattern, a.Entry.Reason)
}

// PinPolicy is what PlanPin judges images by, as render does: the
// allow-list and the environment.
type PinPolicy struct {
	// AllowListFile is the allow-list path relative to the root; empty
	// means policy.AllowListFile (absent: no exceptions).
	AllowListFile string
	// Environment the images are judged in. Empty means no environment
	// (only unscoped exceptions hold), unless DirectoryEnvironment is set.
	Environment string
	// DirectoryEnvironment lets an empty Environment be the directory
	// name when its parent is "overlays" (policy.Environment): the
	// convention of a repository without an environment registry, as
	// acceptance.Request.DirectoryEnvironment for render.
	DirectoryEnvironment bool
}

// Pin is the pinning by digest of one application: PlanPin finds the
// unpinned images, the caller resolves Refs to digests, Apply writes them.
type Pin struct {
	// App is the application as rendered.
	App *render.App
	// Environment is the environment the images were judged in.
	Environment string
	// Unpinned are its container images that the pin rule refuses.
	Unpinned []Unpinned
	// Allowed are its images not pinned by digest that the allow-list lets
	// through in Environment (pin leaves them).
	Allowed []Allowed
	opts    render.Options
	pol     PinPolicy
	files   []*pinFile
}

// pinFile is one file pin edits: where it is written and the changes it
// reports.
type pinFile struct {
	abs     string
	f       *File
	changes []string
}

// PlanPin renders the application of opts and finds every container image
// that the pin rule refuses, by the decision render makes
// (policy.DecideImage with the allow-list and the environment of pol):
// an image the allow-list lets through is Allowed, not Unpinned. A
// malformed digest or reference is invalid input (exit 4) listing every
// one.
func PlanPin(ctx context.Context, opts render.Options, pol PinPolicy) (*Pin, error) {
	app, err := render.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	p := &Pin{App: app, Environment: pol.Environment, opts: opts, pol: pol}
	if pol.DirectoryEnvironment {
		p.Environment = policy.Environment(pol.Environment, app.RelDir())
	}
	allow, err := acceptance.LoadAllowList(app.FS, pol.AllowListFile)
	if err != nil {
		return nil, err
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, o := range objs {
		for _, c := range render.Containers(o) {
			if c.ImageField != render.ImageString {
				continue
			}
			d := policy.DecideImage(c.Image, allow, p.Environment)
			if d.Err == nil {
				continue
			}
			if d.Allowed != nil {
				name, tag := SplitImage(c.Image)
				p.Allowed = append(p.Allowed, Allowed{Entry: *d.Allowed, Unpinned: Unpinned{Source: c.Source, Object: c.Object.String(),
					Field: c.Path + ".image", Image: c.Image, Name: name, Tag: tag}})
				continue
			}
			if strings.Contains(c.Image, "@") {
				bad = append(bad, fmt.Sprintf("%s: %s: %s: image %q has a malformed digest; fix it by hand", c.Source, c.Object, c.Path, c.Image))
				continue
			}
			if _, err := registry.ParseReference(c.Image, false); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %s: %s: %v", c.Source, c.Object, c.Path, err))
				continue
			}
			name, tag := SplitImage(c.Image)
			p.Unpinned = append(p.Unpinned, Unpinned{Source: c.Source, Object: c.Object.String(), Field: c.Path + ".image",
				Image: c.Image, Name: name, Tag: tag})
		}
	}
	if len(bad) > 0 {
		return nil, exitcode.InvalidFile(app.RelDir(), errors.New(strings.Join(bad, "\n")))
	}
	return p, nil
}

// Conflicts refuses, for a kustomization, an image name used with two tags:
// one images: entry sets one tag for every container of that name.
func (p *Pin) Conflicts() error {
	if p.App.Mode != render.ModeKustomize {
		return nil
	}
	byName := map[string]Unpinned{}
	for _, u := range p.Unpinned {
		if prev, ok := byName[u.Name]; ok && prev.Tag != u.Tag {
			return exitcode.Refuse(RuleUnpinned,
				"cannot pin %s from %s: its containers use tags %q (%s %s) and %q (%s %s), "+
					"and one images: entry sets one tag; pin them in the manifests",
				u.Name, p.App.Kustomizations[0].File, prev.Tag, prev.Object, prev.Field, u.Tag, u.Object, u.Field)
		}
		byName[u.Name] = u
	}
	return nil
}

// Refs are the references (name:tag) of the unpinned images, each once, in
// order: what the caller resolves to digests for Apply.
func (p *Pin) Refs() []string {
	seen := map[string]bool{}
	var refs []string
	for _, u := range p.Unpinned {
		r := JoinImage(u.Name, u.Tag)
		if !seen[r] {
			seen[r] = true
			refs = append(refs, r)
		}
	}
	return refs
}

// Apply pins every unpinned image to its digest in resolved (by Refs):
// for a kustomization in the images: of the application's own
// kustomization (the bases are never changed), else in the image: fields
// of the plain manifests. Each edited file must parse to exactly the
// planned documents before any is written, and is replaced atomically. It
// returns every change written (with an error, those written before a
// write failed).
func (p *Pin) Apply(resolved map[string]string) ([]string, error) {
	var err error
	if p.App.Mode == render.ModeKustomize {
		err = p.planKustomization(resolved)
	} else {
		err = p.planManifests(resolved)
	}
	if err != nil {
		return nil, err
	}
	return p.write()
}

// Run pins the app: it refuses conflicting tags (Conflicts), resolves
// every reference of Refs with resolve, edits the files (Apply) and proves
// the result (Verify). It returns the changes written, also with an error
// from a later step.
func (p *Pin) Run(ctx context.Context, resolve func(context.Context, []string) (map[string]string, error)) ([]string, error) {
	if err := p.Conflicts(); err != nil {
		return nil, err
	}
	resolved, err := resolve(ctx, p.Refs())
	if err != nil {
		return nil, err
	}
	changes, err := p.Apply(resolved)
	if err != nil {
		return changes, err
	}
	// The proof: render again, nothing may be left unpinned.
	return changes, p.Verify(ctx)
}

// Verify is the proof after Apply: the application rendered again has no
// unpinned image left.
func (p *Pin) Verify(ctx context.Context) error {
	again, err := PlanPin(ctx, p.opts, p.pol)
	if err != nil {
		return fmt.Errorf("rendering after pin: %w", err)
	}
	if len(again.Unpinned) > 0 {
		return fmt.Errorf("after pin, %s still renders %d unpinned image(s), first %q", p.App.RelDir(), len(again.Unpinned), again.Unpinned[0].Image)
	}
	return nil
}

// write writes every planned file: the edited text of each must parse to
// exactly the planned documents before any is written (one that does not
// leaves every file as it was), and each file is replaced atomically.
func (p *Pin) write() ([]string, error) {
	var edited []*pinFile
	var outs [][]byte
	for _, pf := range p.files {
		if !pf.f.Edited() {
			continue
		}
		out, err := pf.f.Bytes()
		if nc := (*NotCleanError)(nil); errors.As(err, &nc) {
			return nil, fmt.Errorf("%s: pin would not edit the file cleanly (%w); nothing written", pf.f.Name(), nc.Err)
		}
		if err != nil {
			return nil, err
		}
		edited, outs = append(edited, pf), append(outs, out)
	}
	var changes []string
	for i, pf := range edited {
		if err := atomicfile.Write(pf.abs, outs[i], 0o644); err != nil {
			return changes, err
		}
		changes = append(changes, pf.changes...)
	}
	return changes, nil
}

// readKustomization reads the application's own kustomization, whose
// images: pin edits.
func (p *Pin) readKustomization() (*Kustomization, *pinFile, error) {
	rel := p.App.Kustomizations[0].File
	abs := filepath.Join(p.App.FS.Root(), filepath.FromSlash(rel))
	// The render's confined reader: the file the render read, never one a
	// link swapped in out of the repository since, or a FIFO.
	data, err := p.App.FS.ReadForEdit(abs)
	if err != nil {
		return nil, nil, err
	}
	k, err := ParseKustomization(rel, data)
	if err != nil {
		return nil, nil, err
	}
	pf := &pinFile{abs: abs, f: k.File}
	p.files = []*pinFile{pf}
	if !k.ImagesEditable() {
		return nil, nil, exitcode.InvalidFile(rel, errors.New("images: must be a block sequence for pin to edit it (write it one entry per line)"))
	}
	return k, pf, nil
}

// planKustomization edits the images: of the application's own
// kustomization only.
func (p *Pin) planKustomization(resolved map[string]string) error {
	k, pf, err := p.readKustomization()
	if err != nil {
		return err
	}
	rel := k.Name()
	// One images: entry per kustomize name; it can carry only one tag.
	byName := map[string]string{}
	var names []string
	for _, u := range p.Unpinned {
		if _, ok := byName[u.Name]; !ok {
			names = append(names, u.Name)
		}
		byName[u.Name] = u.Tag
	}
	sort.Strings(names)
	var added []NewImage
	for _, n := range names {
		tag := byName[n]
		ref := JoinImage(n, tag)
		showTag := tag
		if showTag == "" {
			showTag = "latest"
		}
		value := showTag + "@" + resolved[ref]
		entry := k.ImageFor(n)
		switch {
		case entry == nil:
			added = append(added, NewImage{Name: n, NewTag: value})
			pf.changes = append(pf.changes, fmt.Sprintf("%s: images: added %s newTag %q (resolved %s)", rel, n, value, ref))
		case !entry.Block():
			return exitcode.InvalidFile(rel, fmt.Errorf("images[%d] must be a block mapping for pin to edit it", entry.Index))
		default:
			old, replaced, err := entry.Set("newTag", value)
			if err != nil {
				return err
			}
			if replaced {
				pf.changes = append(pf.changes, fmt.Sprintf("%s: images[%d] %s: newTag %q -> %q", rel, entry.Index, n, old, value))
			} else {
				pf.changes = append(pf.changes, fmt.Sprintf("%s: images[%d] %s: newTag %q added", rel, entry.Index, n, value))
			}
		}
	}
	return k.AppendImages(added)
}

// planManifests edits the image: fields of the plain manifests.
func (p *Pin) planManifests(resolved map[string]string) error {
	names, err := os.ReadDir(p.App.Dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", p.App.RelDir(), err)
	}
	for _, e := range names {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !e.Type().IsRegular() {
			continue
		}
		switch strings.ToLower(filepath.Ext(n)) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		pf, err := p.planManifest(filepath.Join(p.App.Dir, n), resolved)
		if err != nil {
			return err
		}
		p.files = append(p.files, pf)
	}
	return nil
}

// planManifest edits the image: fields of the manifest file abs.
func (p *Pin) planManifest(abs string, resolved map[string]string) (*pinFile, error) {
	rel := p.App.FS.Rel(abs)
	// The render's confined reader: the file the render read, never one a
	// link swapped in out of the repository since, or a FIFO.
	data, err := p.App.FS.ReadForEdit(abs)
	if err != nil {
		return nil, err
	}
	f, err := Parse(rel, data)
	if err != nil {
		return nil, err
	}
	pf := &pinFile{abs: abs, f: f}
	for _, img := range f.ContainerImages() {
		image := img.Node.Value
		if _, err := policy.CheckImage(image); err == nil || strings.Contains(image, "@") {
			continue
		}
		dig, ok := resolved[JoinImage(SplitImage(image))]
		if !ok {
			continue
		}
		value := image + "@" + dig
		if err := f.Replace(img.Node, value); err != nil {
			return nil, err
		}
		pf.changes = append(pf.changes, fmt.Sprintf("%s: document %d: %s: %q -> %q", rel, img.Document+1, img.Path, image, value))
	}
	return pf, nil
}
