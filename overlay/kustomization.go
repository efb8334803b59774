package overlay

import (
	"errors"
	"fmt"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
	yaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Kustomization is a kustomization file being edited in place: a File of
// one YAML mapping, with the operations of its images: list.
type Kustomization struct {
	*File
	root, imagesKey, images *yaml.Node
}

// ParseKustomization parses data, the kustomization file name, which must
// be one YAML mapping (a *exitcode.InvalidInput otherwise).
func ParseKustomization(name string, data []byte) (*Kustomization, error) {
	f, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	if len(f.docs) != 1 || len(f.docs[0].Content) != 1 || f.docs[0].Content[0].Kind != yaml.MappingNode {
		return nil, &exitcode.InvalidInput{File: name, Err: errors.New("a kustomization must be one YAML mapping")}
	}
	k := &Kustomization{File: f, root: f.docs[0].Content[0]}
	k.imagesKey, k.images = mapLookup(k.root, "images")
	return k, nil
}

// ImagesEditable reports whether entries can be appended to images:: it is
// absent, or a block sequence (one entry per line).
func (k *Kustomization) ImagesEditable() bool {
	return k.images == nil || (k.images.Kind == yaml.SequenceNode && k.images.Style&yaml.FlowStyle == 0)
}

// ImageEntry is one entry of a kustomization's images:.
type ImageEntry struct {
	// Index is the entry's position in images:.
	Index int
	file  *File
	node  *yaml.Node
}

// Image finds the images: entry whose name: is name, the key kustomize
// edit set image uses; nil when there is none.
func (k *Kustomization) Image(name string) *ImageEntry {
	if k.images == nil {
		return nil
	}
	for i, e := range k.images.Content {
		if _, v := mapLookup(e, "name"); v != nil && v.Value == name {
			return &ImageEntry{Index: i, file: k.File, node: e}
		}
	}
	return nil
}

// ImageFor finds the images: entry whose result is the image name
// rendered: newName when it is set, else name; nil when there is none.
func (k *Kustomization) ImageFor(rendered string) *ImageEntry {
	if k.images == nil {
		return nil
	}
	for i, e := range k.images.Content {
		_, n := mapLookup(e, "name")
		_, nn := mapLookup(e, "newName")
		switch {
		case nn != nil && nn.Value != "":
			if nn.Value == rendered {
				return &ImageEntry{Index: i, file: k.File, node: e}
			}
		case n != nil && n.Value == rendered:
			return &ImageEntry{Index: i, file: k.File, node: e}
		}
	}
	return nil
}

// Block reports whether the entry is a block mapping, the only form Set
// edits.
func (e *ImageEntry) Block() bool {
	return e.node.Kind == yaml.MappingNode && e.node.Style&yaml.FlowStyle == 0
}

// Field returns the value of the entry's key (name, newName, newTag,
// digest) and whether the key is present.
func (e *ImageEntry) Field(key string) (string, bool) {
	_, v := mapLookup(e.node, key)
	if v == nil {
		return "", false
	}
	return v.Value, true
}

// Set plans key: value in the entry: the present value is replaced keeping
// its quoting (old is that value, replaced true), else a line is inserted
// after the entry's first key (newTag double-quoted, so a tag like 1.10
// stays a string). The entry must be a block mapping.
func (e *ImageEntry) Set(key, value string) (old string, replaced bool, err error) {
	if !e.Block() || len(e.node.Content) == 0 {
		return "", false, &exitcode.InvalidInput{File: e.file.name, Err: fmt.Errorf("images[%d] must be a block mapping to be edited in place", e.Index)}
	}
	if _, v := mapLookup(e.node, key); v != nil {
		old = v.Value
		if err := e.file.Replace(v, value); err != nil {
			return "", false, err
		}
		return old, true, nil
	}
	return "", false, e.file.insertKey(e.node, key, value, key == "newTag")
}

// NewImage is an images: entry to append: NewName is optional; NewTag is
// written double-quoted.
type NewImage struct {
	Name, NewName, NewTag string
}

// AppendImages plans new images: entries after the last one, indented like
// their neighbours, before the comments and blank lines that lead the next
// key; without images:, a new images: key at the end of the file, indented
// like resources:. Append all entries in one call.
func (k *Kustomization) AppendImages(entries []NewImage) error {
	if len(entries) == 0 {
		return nil
	}
	if !k.ImagesEditable() {
		return &exitcode.InvalidInput{File: k.name, Err: errors.New("images: must be a block sequence to append entries")}
	}
	if k.imagesKey != nil && k.imagesKey.Line == 0 {
		return &exitcode.InvalidInput{File: k.name, Err: errors.New("images: was added by an earlier AppendImages; append every entry in one call")}
	}
	var items []*yaml.Node
	for _, e := range entries {
		content := []*yaml.Node{strNode("name"), strNode(e.Name)}
		if e.NewName != "" {
			content = append(content, strNode("newName"), strNode(e.NewName))
		}
		content = append(content, strNode("newTag"), strNode(e.NewTag))
		items = append(items, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: content})
	}
	f := k.File
	if k.images == nil {
		// A new images: at the end, indented like resources: when present.
		ind := "  "
		if _, res := mapLookup(k.root, "resources"); res != nil && len(res.Content) > 0 && res.Style&yaml.FlowStyle == 0 {
			ind = strings.Repeat(" ", max(res.Content[0].Column-3, 0))
		}
		text := "images:\n" + itemsText(ind, entries)
		at := len(f.data)
		if at > 0 && f.data[at-1] != '\n' {
			text = "\n" + text
		}
		f.edits = append(f.edits, textEdit{start: at, end: at, text: text})
		k.imagesKey = strNode("images")
		k.images = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
		k.root.Content = append(k.root.Content, k.imagesKey, k.images)
		return nil
	}
	// After the last entry: before the next top-level key (and the comments
	// and blank lines just above it), else at the end of the file.
	ind := strings.Repeat(" ", max(k.imagesKey.Column-1, 0)) + "  "
	if len(k.images.Content) > 0 {
		ind = strings.Repeat(" ", max(k.images.Content[0].Column-3, 0))
	}
	at := len(f.data)
	if next := nextKey(k.root, k.imagesKey); next != nil {
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
	k.images.Content = append(k.images.Content, items...)
	return nil
}

func itemsText(ind string, entries []NewImage) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s- name: %s\n", ind, e.Name)
		if e.NewName != "" {
			fmt.Fprintf(&b, "%s  newName: %s\n", ind, e.NewName)
		}
		fmt.Fprintf(&b, "%s  newTag: %s\n", ind, quoteYAML(e.NewTag))
	}
	return b.String()
}

// Patch is one patch of a kustomization (patches: or
// patchesStrategicMerge:).
type Patch struct {
	// Value is the path of the patch file, relative to the kustomization's
	// directory, or with Inline the patch itself.
	Value  string
	Inline bool
}

// Patches lists the kustomization's patches in order: patches: first, then
// patchesStrategicMerge:.
func (k *Kustomization) Patches() []Patch {
	var patches []Patch
	if _, ps := mapLookup(k.root, "patches"); ps != nil {
		for _, e := range ps.Content {
			if _, path := mapLookup(e, "path"); path != nil {
				patches = append(patches, Patch{Value: path.Value})
			} else if _, patch := mapLookup(e, "patch"); patch != nil {
				patches = append(patches, Patch{Value: patch.Value, Inline: true})
			}
		}
	}
	if _, ps := mapLookup(k.root, "patchesStrategicMerge"); ps != nil {
		for _, e := range ps.Content {
			patches = append(patches, Patch{Value: e.Value, Inline: strings.Contains(e.Value, "\n")})
		}
	}
	return patches
}

// SetImageDigest edits, in the overlay kustomization data (the file name),
// the images: entry that renders the image name to newTag "tag@digest"
// (tag "latest" when empty), or to digest: when the entry uses it, keeping
// every comment and all formatting. It reports whether the file changed;
// unchanged, it returns data itself.
func SetImageDigest(data []byte, file, name, tag, digest string) ([]byte, bool, error) {
	k, err := ParseKustomization(file, data)
	if err != nil {
		return nil, false, err
	}
	e := k.ImageFor(name)
	if e == nil || !e.Block() {
		return nil, false, &exitcode.InvalidInput{File: file, Err: fmt.Errorf(
			"images: has no block entry for %s: the target overlay must pin the artifact with an images: entry (throughline pin adds one)", name)}
	}
	key, value := "digest", digest
	if _, ok := e.Field("digest"); !ok {
		if _, ok := e.Field("newTag"); !ok {
			return nil, false, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("images[%d] %s has neither newTag nor digest", e.Index, name)}
		}
		if tag == "" {
			tag = "latest"
		}
		key, value = "newTag", tag+"@"+digest
	}
	if v, _ := e.Field(key); v == value {
		return data, false, nil
	}
	if _, _, err := e.Set(key, value); err != nil {
		return nil, false, err
	}
	out, err := k.Bytes()
	var nc *NotCleanError
	if errors.As(err, &nc) {
		return nil, false, fmt.Errorf("%s: the digest cannot be edited cleanly (%w)", file, nc.Err)
	}
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}
