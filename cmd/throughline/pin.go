package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/overlay"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/render"
)

func newPinCommand(g *globals, stdout io.Writer) *cobra.Command {
	var (
		rf    registryFlags
		root  string
		check bool
		set   imageSetFlag
	)
	cmd := &cobra.Command{
		Use:   "pin [PATH]",
		Short: "Rewrite image tags to digests in a kustomization or plain manifests, in place",
		Long: `Resolve every image of the application PATH (default ".") that is not pinned by
digest and rewrite it in place, keeping the tag for readers:

  kustomization   the images: entry of PATH's kustomization becomes
                  newTag: "1.4.2@sha256:<digest>" (kustomize renders
                  name:1.4.2@sha256:<digest>); an image used by a base without
                  an entry gets one. Bases are never changed.
  plain manifests image: nginx:1.27 becomes image: nginx:1.27@sha256:<digest>.

Only the edited values change in each file: comments, order, quoting and
indentation are kept. Files are replaced atomically. Every change is printed.

--check changes nothing and asks no registry: it lists every unpinned image and
exits 3 when there is one.

--set NAME=TAG@sha256:<digest> asks no registry either: like kustomize edit set
image, it writes newTag: "TAG@sha256:<digest>" into the images: entry of NAME
in PATH's kustomization (adding the entry when a container of the application
or a patch of the kustomization uses NAME; replacing a pinned value, so a
release re-pins). The reference is validated as the policy validates images
(sha256 only), other images are left alone, the edit keeps the file's format
and the application is rendered again to check that every container of NAME
carries the new reference. NAME=NEWNAME:TAG@sha256:<digest> also writes
newName (the image moves to another repository). Repeat --set for several
images. Exit 2 for a malformed --set, 4 when no container uses NAME.`,
		Example: `  throughline pin apps/checkout/overlays/staging
  throughline pin --check apps/checkout/overlays/staging   # PR job
  throughline pin --set ghcr.io/throughline-dev/throughline=v0.2.0@sha256:<digest> deploy/serve`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "."
			if len(args) == 1 {
				path = args[0]
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return exitcode.Usagef("path %s: %v", path, err)
			}
			if root == "" {
				if root, err = render.FindRoot(abs); err != nil {
					return err
				}
			}
			p := &pinner{root: root, path: abs}
			if len(set.sets) > 0 {
				if check {
					return exitcode.Usagef("--set and --check exclude each other")
				}
				return p.runSet(cmd.Context(), set.sets, stdout)
			}
			if err := p.plan(cmd.Context()); err != nil {
				return err
			}
			if check {
				if len(p.unpinned) == 0 {
					_, err := fmt.Fprintf(stdout, "OK every image of %s is pinned by digest\n", p.app.RelDir())
					return err
				}
				var lines []string
				for _, u := range p.unpinned {
					lines = append(lines, fmt.Sprintf("%s: %s: %s %q is not pinned by digest", u.source, u.object, u.field, u.image))
				}
				for _, l := range lines {
					fmt.Fprintln(stdout, "UNPINNED", l)
				}
				return &exitcode.Refusal{Rule: "unpinned-image", Reason: fmt.Sprintf("%d unpinned image(s) in %s (listed on stdout); run throughline pin %s", len(lines), p.app.RelDir(), path)}
			}
			if len(p.unpinned) == 0 {
				_, err := fmt.Fprintf(stdout, "nothing to pin: every image of %s is pinned by digest\n", p.app.RelDir())
				return err
			}
			if err := p.conflicts(); err != nil {
				return err
			}
			c, err := rf.client()
			if err != nil {
				return err
			}
			if err := p.resolve(cmd.Context(), c); err != nil {
				return err
			}
			changes, err := p.apply()
			if err != nil {
				return err
			}
			for _, ch := range changes {
				fmt.Fprintln(stdout, ch)
				g.log.Debug().Str("change", ch).Msg("pinned")
			}
			// The proof: render again, nothing may be left unpinned.
			again := &pinner{root: root, path: abs}
			if err := again.plan(cmd.Context()); err != nil {
				return fmt.Errorf("rendering after pin: %w", err)
			}
			if len(again.unpinned) > 0 {
				return fmt.Errorf("after pin, %s still renders %d unpinned image(s), first %q", p.app.RelDir(), len(again.unpinned), again.unpinned[0].image)
			}
			return nil
		},
	}
	rf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&root, "root", "", "repository root (default: the enclosing Git work tree, else PATH)")
	f.BoolVar(&check, "check", false, "change nothing; exit 3 when any image is not pinned by digest")
	f.Var(&set, "set", "write TAG@sha256:<digest> (and NEWNAME) into the images: entry of NAME (repeatable; no registry is asked)")
	return cmd
}

// unpinnedImage is one container image that is not pinned by digest.
type unpinnedImage struct {
	source, object, field string
	image                 string
	// name and tag as kustomize splits them (tag "" when none).
	name, tag string
}

// pinner plans and applies the pinning of one application.
type pinner struct {
	root, path string
	app        *render.App
	unpinned   []unpinnedImage
	// resolved maps an image reference (name:tag) to its digest.
	resolved map[string]string
	// refs are the references to resolve, in order.
	refs []string
	// docs: the files to edit (kustomization, or every manifest file).
	files []*pinFile
}

// pinFile is one file pin edits: where it is written and the changes it
// reports.
type pinFile struct {
	abs     string
	f       *overlay.File
	changes []string
}

// plan renders the application and finds every unpinned image.
func (p *pinner) plan(ctx context.Context) error {
	app, err := render.Open(ctx, render.Options{Root: p.root, Path: p.path})
	if err != nil {
		return err
	}
	p.app = app
	objs, err := app.Build(ctx)
	if err != nil {
		return err
	}
	var bad []string
	for _, o := range objs {
		for _, c := range render.Containers(o) {
			if c.ImageField != render.ImageString {
				continue
			}
			if _, err := policy.CheckImage(c.Image); err == nil {
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
			name, tag := overlay.SplitImage(c.Image)
			p.unpinned = append(p.unpinned, unpinnedImage{source: c.Source, object: c.Object.String(), field: c.Path + ".image", image: c.Image, name: name, tag: tag})
		}
	}
	if len(bad) > 0 {
		return &exitcode.InvalidInput{File: app.RelDir(), Err: errors.New(strings.Join(bad, "\n"))}
	}
	return nil
}

// conflicts refuses, for a kustomization, an image name used with two tags:
// one images: entry sets one tag for every container of that name.
func (p *pinner) conflicts() error {
	if p.app.Mode != render.ModeKustomize {
		return nil
	}
	byName := map[string]unpinnedImage{}
	for _, u := range p.unpinned {
		if prev, ok := byName[u.name]; ok && prev.tag != u.tag {
			return &exitcode.Refusal{Rule: "unpinned-image", Reason: fmt.Sprintf("cannot pin %s from %s: its containers use tags %q (%s %s) and %q (%s %s), and one images: entry sets one tag; pin them in the manifests",
				u.name, p.app.Kustomizations[0].File, prev.tag, prev.object, prev.field, u.tag, u.object, u.field)}
		}
		byName[u.name] = u
	}
	return nil
}

func (p *pinner) resolve(ctx context.Context, c *registry.Client) error {
	seen := map[string]bool{}
	for _, u := range p.unpinned {
		r := overlay.JoinImage(u.name, u.tag)
		if !seen[r] {
			seen[r] = true
			p.refs = append(p.refs, r)
		}
	}
	p.resolved = map[string]string{}
	var errs []error
	for i, r := range c.ResolveAll(ctx, p.refs, false) {
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		p.resolved[p.refs[i]] = r.Descriptor.Digest
	}
	return registryError(worstError(errs))
}

// apply plans the edits of every file, checks them and writes the files.
func (p *pinner) apply() ([]string, error) {
	var err error
	if p.app.Mode == render.ModeKustomize {
		err = p.planKustomization()
	} else {
		err = p.planManifests()
	}
	if err != nil {
		return nil, err
	}
	return p.write()
}

// write writes every planned file: the edited text must parse to exactly
// the planned documents, and each file is replaced atomically.
func (p *pinner) write() ([]string, error) {
	var changes []string
	for _, pf := range p.files {
		if !pf.f.Edited() {
			continue
		}
		out, err := pf.f.Bytes()
		if nc := (*overlay.NotCleanError)(nil); errors.As(err, &nc) {
			return nil, fmt.Errorf("%s: pin would not edit the file cleanly (%w); nothing written", pf.f.Name(), nc.Err)
		}
		if err != nil {
			return nil, err
		}
		if err := atomicfile.Write(pf.abs, out, 0o644); err != nil {
			return nil, err
		}
		changes = append(changes, pf.changes...)
	}
	return changes, nil
}

// readInput reads the file abs (rel in errors).
func readInput(abs, rel string) ([]byte, error) {
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: rel, Err: err}
	}
	return data, nil
}

// readKustomization reads the application's own kustomization, whose
// images: pin edits.
func (p *pinner) readKustomization() (*overlay.Kustomization, *pinFile, error) {
	rel := p.app.Kustomizations[0].File
	abs := filepath.Join(p.app.FS.Root(), filepath.FromSlash(rel))
	data, err := readInput(abs, rel)
	if err != nil {
		return nil, nil, err
	}
	k, err := overlay.ParseKustomization(rel, data)
	if err != nil {
		return nil, nil, err
	}
	pf := &pinFile{abs: abs, f: k.File}
	p.files = []*pinFile{pf}
	if !k.ImagesEditable() {
		return nil, nil, &exitcode.InvalidInput{File: rel, Err: errors.New("images: must be a block sequence for pin to edit it (write it one entry per line)")}
	}
	return k, pf, nil
}

// planKustomization edits the images: of the application's own
// kustomization only.
func (p *pinner) planKustomization() error {
	k, pf, err := p.readKustomization()
	if err != nil {
		return err
	}
	rel := k.Name()
	// One images: entry per kustomize name; it can carry only one tag.
	byName := map[string]string{}
	var names []string
	for _, u := range p.unpinned {
		if _, ok := byName[u.name]; !ok {
			names = append(names, u.name)
		}
		byName[u.name] = u.tag
	}
	sort.Strings(names)
	var added []overlay.NewImage
	for _, n := range names {
		tag := byName[n]
		ref := overlay.JoinImage(n, tag)
		showTag := tag
		if showTag == "" {
			showTag = "latest"
		}
		value := showTag + "@" + p.resolved[ref]
		entry := k.ImageFor(n)
		switch {
		case entry == nil:
			added = append(added, overlay.NewImage{Name: n, NewTag: value})
			pf.changes = append(pf.changes, fmt.Sprintf("%s: images: added %s newTag %q (resolved %s)", rel, n, value, ref))
		case !entry.Block():
			return &exitcode.InvalidInput{File: rel, Err: fmt.Errorf("images[%d] must be a block mapping for pin to edit it", entry.Index)}
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
func (p *pinner) planManifests() error {
	names, err := os.ReadDir(p.app.Dir)
	if err != nil {
		return err
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
		abs := filepath.Join(p.app.Dir, n)
		rel := p.app.FS.Rel(abs)
		data, err := readInput(abs, rel)
		if err != nil {
			return err
		}
		f, err := overlay.Parse(rel, data)
		if err != nil {
			return err
		}
		pf := &pinFile{abs: abs, f: f}
		for _, img := range f.ContainerImages() {
			image := img.Node.Value
			if _, err := policy.CheckImage(image); err == nil || strings.Contains(image, "@") {
				continue
			}
			dig, ok := p.resolved[overlay.JoinImage(overlay.SplitImage(image))]
			if !ok {
				continue
			}
			value := image + "@" + dig
			if err := f.Replace(img.Node, value); err != nil {
				return err
			}
			pf.changes = append(pf.changes, fmt.Sprintf("%s: document %d: %s: %q -> %q", rel, img.Document+1, img.Path, image, value))
		}
		p.files = append(p.files, pf)
	}
	return nil
}
