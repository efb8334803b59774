package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/atomicfile"
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
				return usagef("path %s: %v", path, err)
			}
			if root == "" {
				if root, err = render.FindRoot(abs); err != nil {
					return err
				}
			}
			p := &pinner{root: root, path: abs}
			if len(set.sets) > 0 {
				if check {
					return usagef("--set and --check exclude each other")
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
				return &refusedError{fmt.Sprintf("%d unpinned image(s) in %s (listed on stdout); run throughline pin %s", len(lines), p.app.RelDir(), path)}
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

type pinFile struct {
	abs, rel string
	data     []byte
	docs     []*kyaml.Node
	edits    []textEdit
	changes  []string
}

// textEdit replaces data[start:end] with text (an insertion when start == end).
type textEdit struct {
	start, end int
	text       string
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
			name, tag := splitImage(c.Image)
			p.unpinned = append(p.unpinned, unpinnedImage{source: c.Source, object: c.Object.String(), field: c.Path + ".image", image: c.Image, name: name, tag: tag})
		}
	}
	if len(bad) > 0 {
		return &render.InputError{File: app.RelDir(), Err: errors.New(strings.Join(bad, "\n"))}
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
			return &refusedError{fmt.Sprintf("cannot pin %s from %s: its containers use tags %q (%s %s) and %q (%s %s), and one images: entry sets one tag; pin them in the manifests",
				u.name, p.app.Kustomizations[0].File, prev.tag, prev.object, prev.field, u.tag, u.object, u.field)}
		}
		byName[u.name] = u
	}
	return nil
}

// splitImage splits an image without a digest into name and tag the way
// kustomize does: the tag is after the last ":" of the last path element.
func splitImage(image string) (name, tag string) {
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i+1:]
	}
	return image, ""
}

// refFor is the reference to resolve for an image name and tag.
func refFor(name, tag string) string {
	if tag == "" {
		return name
	}
	return name + ":" + tag
}

func (p *pinner) resolve(ctx context.Context, c *registry.Client) error {
	seen := map[string]bool{}
	for _, u := range p.unpinned {
		r := refFor(u.name, u.tag)
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
	for _, f := range p.files {
		if len(f.edits) == 0 {
			continue
		}
		out, err := applyEdits(f.data, f.edits)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.rel, err)
		}
		// The edited text must parse to exactly the planned documents.
		if err := sameDocuments(out, f.docs); err != nil {
			return nil, fmt.Errorf("%s: pin would not edit the file cleanly (%v); nothing written", f.rel, err)
		}
		if err := atomicfile.Write(f.abs, out, 0o644); err != nil {
			return nil, err
		}
		changes = append(changes, f.changes...)
	}
	return changes, nil
}

func readDocs(abs, rel string) (*pinFile, error) {
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, &render.InputError{File: rel, Err: err}
	}
	f := &pinFile{abs: abs, rel: rel, data: data}
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	for {
		var n kyaml.Node
		if err := dec.Decode(&n); err == io.EOF {
			break
		} else if err != nil {
			return nil, &render.InputError{File: rel, Err: err}
		}
		f.docs = append(f.docs, &n)
	}
	return f, nil
}

// planKustomization edits the images: of the application's own
// kustomization only.
func (p *pinner) planKustomization() error {
	rel := p.app.Kustomizations[0].File
	f, err := readDocs(filepath.Join(p.app.FS.Root(), filepath.FromSlash(rel)), rel)
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
	var newEntries []string
	for _, n := range names {
		tag := byName[n]
		dig := p.resolved[refFor(n, tag)]
		showTag := tag
		if showTag == "" {
			showTag = "latest"
		}
		value := showTag + "@" + dig
		entry, idx := findImageEntry(images, n)
		switch {
		case entry == nil:
			newEntries = append(newEntries, n)
			f.changes = append(f.changes, fmt.Sprintf("%s: images: added %s newTag %q (resolved %s)", rel, n, value, refFor(n, tag)))
		case entry.Style&kyaml.FlowStyle != 0 || entry.Kind != kyaml.MappingNode:
			return &render.InputError{File: rel, Err: fmt.Errorf("images[%d] must be a block mapping for pin to edit it", idx)}
		default:
			_, nt := mapLookup(entry, "newTag")
			if nt != nil {
				if err := f.replace(nt, value); err != nil {
					return err
				}
				f.changes = append(f.changes, fmt.Sprintf("%s: images[%d] %s: newTag %q -> %q", rel, idx, n, nt.Value, value))
				nt.Value, nt.Tag = value, "!!str"
			} else {
				if err := f.insertKey(entry, "newTag", value); err != nil {
					return err
				}
				f.changes = append(f.changes, fmt.Sprintf("%s: images[%d] %s: newTag %q added", rel, idx, n, value))
			}
		}
	}
	var entries []imageEntry
	for _, n := range newEntries {
		entries = append(entries, imageEntry{name: n, value: p.newTagValue(n, byName[n])})
	}
	return f.appendImageEntries(root, imagesKey, images, entries)
}

// imageEntry is a new images: entry: name, newName (optional) and newTag.
type imageEntry struct{ name, newName, value string }

// insertKey plans a "key: value" line (newTag, newName) right after the
// first key of a block mapping entry of images:.
func (f *pinFile) insertKey(entry *kyaml.Node, key, value string) error {
	first := entry.Content[0]
	v := value
	if key == "newTag" {
		v = quoteYAML(value) // a tag like 1.10 must stay a string
	}
	text := strings.Repeat(" ", first.Column-1) + key + ": " + v + "\n"
	at, err := f.lineStart(first.Line + 1)
	if err != nil {
		return err
	}
	f.edits = append(f.edits, textEdit{start: at, end: at, text: text})
	entry.Content = append(entry.Content, strNode(key), strNode(value))
	return nil
}

// appendImageEntries plans new images: entries after the last one (or a new
// images: key at the end), indented like their neighbours.
func (f *pinFile) appendImageEntries(root, imagesKey, images *kyaml.Node, entries []imageEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var items []*kyaml.Node
	for _, e := range entries {
		content := []*kyaml.Node{strNode("name"), strNode(e.name)}
		if e.newName != "" {
			content = append(content, strNode("newName"), strNode(e.newName))
		}
		content = append(content, strNode("newTag"), strNode(e.value))
		items = append(items, &kyaml.Node{Kind: kyaml.MappingNode, Tag: "!!map", Content: content})
	}
	if images == nil {
		// A new images: at the end, indented like resources: when present.
		ind := "  "
		if _, res := mapLookup(root, "resources"); res != nil && len(res.Content) > 0 && res.Style&kyaml.FlowStyle == 0 {
			ind = strings.Repeat(" ", max(res.Content[0].Column-3, 0))
		}
		text := "images:\n" + itemsText(ind, entries)
		at := len(f.data)
		if at > 0 && f.data[at-1] != '\n' {
			text = "\n" + text
		}
		f.edits = append(f.edits, textEdit{start: at, end: at, text: text})
		root.Content = append(root.Content, strNode("images"), &kyaml.Node{Kind: kyaml.SequenceNode, Tag: "!!seq", Content: items})
		return nil
	}
	// After the last entry: before the next top-level key (and the comments
	// and blank lines just above it), else at the end of the file.
	ind := strings.Repeat(" ", imagesKey.Column-1) + "  "
	if len(images.Content) > 0 {
		ind = strings.Repeat(" ", max(images.Content[0].Column-3, 0))
	}
	at := len(f.data)
	if next := nextKey(root, imagesKey); next != nil {
		line := next.Line
		for line > 1 {
			s := f.line(line - 1)
			t := strings.TrimSpace(s)
			if t == "" || (strings.HasPrefix(t, "#") && len(s)-len(strings.TrimLeft(s, " ")) <= next.Column-1) {
				line--
				continue
			}
			break
		}
		var err error
		if at, err = f.lineStart(line); err != nil {
			return err
		}
	} else {
		for at > 0 && (f.data[at-1] == '\n' || f.data[at-1] == ' ' || f.data[at-1] == '\r') {
			at--
		}
		if at < len(f.data) {
			at++ // after the last line's newline
		}
	}
	text := itemsText(ind, entries)
	if at > 0 && f.data[at-1] != '\n' {
		text = "\n" + text
	}
	f.edits = append(f.edits, textEdit{start: at, end: at, text: text})
	images.Content = append(images.Content, items...)
	return nil
}

func (p *pinner) newTagValue(name, tag string) string {
	if tag == "" {
		return "latest@" + p.resolved[refFor(name, tag)]
	}
	return tag + "@" + p.resolved[refFor(name, tag)]
}

func itemsText(ind string, entries []imageEntry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s- name: %s\n", ind, e.name)
		if e.newName != "" {
			fmt.Fprintf(&b, "%s  newName: %s\n", ind, e.newName)
		}
		fmt.Fprintf(&b, "%s  newTag: %s\n", ind, quoteYAML(e.value))
	}
	return b.String()
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
		f, err := readDocs(abs, p.app.FS.Rel(abs))
		if err != nil {
			return err
		}
		for di, doc := range f.docs {
			var walkErr error
			walkContainerImages(doc, "", func(path string, img *kyaml.Node) {
				if walkErr != nil || img.Kind != kyaml.ScalarNode {
					return
				}
				if _, err := policy.CheckImage(img.Value); err == nil || strings.Contains(img.Value, "@") {
					return
				}
				dig, ok := p.resolved[refFor(splitImage(img.Value))]
				if !ok {
					return
				}
				value := img.Value + "@" + dig
				if walkErr = f.replace(img, value); walkErr != nil {
					return
				}
				f.changes = append(f.changes, fmt.Sprintf("%s: document %d: %s: %q -> %q", f.rel, di+1, path, img.Value, value))
				img.Value = value
			})
			if walkErr != nil {
				return walkErr
			}
		}
		p.files = append(p.files, f)
	}
	return nil
}

// walkContainerImages visits the image node of every item of every
// containers, initContainers and ephemeralContainers list, at any depth.
func walkContainerImages(n *kyaml.Node, path string, visit func(string, *kyaml.Node)) {
	switch n.Kind {
	case kyaml.DocumentNode:
		for _, c := range n.Content {
			walkContainerImages(c, path, visit)
		}
	case kyaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if v.Kind == kyaml.SequenceNode && isContainerList(k.Value) {
				for j, item := range v.Content {
					if item.Kind != kyaml.MappingNode {
						continue
					}
					if _, img := mapLookup(item, "image"); img != nil {
						visit(fmt.Sprintf("%s[%d].image", p, j), img)
					}
				}
				continue
			}
			walkContainerImages(v, p, visit)
		}
	case kyaml.SequenceNode:
		for j, c := range n.Content {
			walkContainerImages(c, fmt.Sprintf("%s[%d]", path, j), visit)
		}
	}
}

func isContainerList(k string) bool {
	for _, f := range render.PodSpecContainerFields {
		if f == k {
			return true
		}
	}
	return false
}

func mapLookup(m *kyaml.Node, key string) (k, v *kyaml.Node) {
	if m == nil || m.Kind != kyaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func nextKey(m, key *kyaml.Node) *kyaml.Node {
	for i := 0; i+2 < len(m.Content); i += 2 {
		if m.Content[i] == key {
			return m.Content[i+2]
		}
	}
	return nil
}

// findImageEntry finds the images: entry whose result is the rendered name:
// newName when set, else name.
func findImageEntry(images *kyaml.Node, name string) (*kyaml.Node, int) {
	if images == nil {
		return nil, -1
	}
	for i, e := range images.Content {
		_, n := mapLookup(e, "name")
		_, nn := mapLookup(e, "newName")
		switch {
		case nn != nil && nn.Value != "":
			if nn.Value == name {
				return e, i
			}
		case n != nil && n.Value == name:
			return e, i
		}
	}
	return nil, -1
}

func strNode(v string) *kyaml.Node {
	return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: "!!str", Value: v}
}

// quoteYAML double-quotes an image value (references are plain ASCII).
func quoteYAML(s string) string { return `"` + s + `"` }

// line returns line n (1-based) without its newline.
func (f *pinFile) line(n int) string {
	start, err := f.lineStart(n)
	if err != nil {
		return ""
	}
	end := bytes.IndexByte(f.data[start:], '\n')
	if end < 0 {
		return string(f.data[start:])
	}
	return strings.TrimSuffix(string(f.data[start:start+end]), "\r")
}

// lineStart is the byte offset of line n (1-based); the end of the data for
// the line after the last.
func (f *pinFile) lineStart(n int) (int, error) {
	off := 0
	for l := 1; l < n; l++ {
		i := bytes.IndexByte(f.data[off:], '\n')
		if i < 0 {
			if l == n-1 {
				return len(f.data), nil
			}
			return 0, fmt.Errorf("%s: line %d is past the end of the file", f.rel, n)
		}
		off += i + 1
	}
	return off, nil
}

// replace plans the replacement of a scalar's text, keeping its quoting.
func (f *pinFile) replace(n *kyaml.Node, value string) error {
	start, err := f.lineStart(n.Line)
	if err != nil {
		return err
	}
	// Column counts characters, not bytes.
	for c := 1; c < n.Column; c++ {
		if start >= len(f.data) {
			return fmt.Errorf("%s:%d:%d: column is past the end of the line", f.rel, n.Line, n.Column)
		}
		_, size := utf8.DecodeRune(f.data[start:])
		start += size
	}
	end := -1
	var text string
	switch n.Style {
	case kyaml.DoubleQuotedStyle:
		if start < len(f.data) && f.data[start] == '"' {
			for j := start + 1; j < len(f.data); j++ {
				if f.data[j] == '\\' {
					j++
				} else if f.data[j] == '"' {
					end = j + 1
					break
				}
			}
		}
		text = `"` + value + `"`
	case kyaml.SingleQuotedStyle:
		if start < len(f.data) && f.data[start] == '\'' {
			for j := start + 1; j < len(f.data); j++ {
				if f.data[j] == '\'' {
					if j+1 < len(f.data) && f.data[j+1] == '\'' {
						j++
						continue
					}
					end = j + 1
					break
				}
			}
		}
		text = "'" + value + "'"
	case 0:
		if bytes.HasPrefix(f.data[start:], []byte(n.Value)) {
			end = start + len(n.Value)
		}
		text = value
	}
	if end < 0 {
		return fmt.Errorf("%s:%d:%d: cannot edit the value %q in place (write it as a plain or quoted scalar)", f.rel, n.Line, n.Column, n.Value)
	}
	f.edits = append(f.edits, textEdit{start: start, end: end, text: text})
	return nil
}

func applyEdits(data []byte, edits []textEdit) ([]byte, error) {
	sorted := append([]textEdit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].start < sorted[j].start })
	var out bytes.Buffer
	prev := 0
	for _, e := range sorted {
		if e.start < prev || e.end < e.start || e.end > len(data) {
			return nil, errors.New("overlapping edits")
		}
		out.Write(data[prev:e.start])
		out.WriteString(e.text)
		prev = e.end
	}
	out.Write(data[prev:])
	return out.Bytes(), nil
}

// sameDocuments decodes data and compares it, as plain values, with the
// planned documents.
func sameDocuments(data []byte, want []*kyaml.Node) error {
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var n kyaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			if i != len(want) {
				return fmt.Errorf("%d documents, want %d", i, len(want))
			}
			return nil
		}
		if err != nil {
			return err
		}
		if i >= len(want) {
			return fmt.Errorf("more than %d documents", len(want))
		}
		var got, exp any
		if err := n.Decode(&got); err != nil {
			return err
		}
		if err := want[i].Decode(&exp); err != nil {
			return err
		}
		if !reflect.DeepEqual(got, exp) {
			return fmt.Errorf("document %d differs from the plan", i+1)
		}
	}
}
