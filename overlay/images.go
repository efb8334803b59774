package overlay

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	yaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/render"
)

// ImageField is the image: field of one container in a File's documents.
type ImageField struct {
	// Document is the 0-based index of the document in the file.
	Document int
	// Path is the field's path in the document, such as
	// spec.template.spec.containers[0].image.
	Path string
	// Node is the scalar to pass to File.Replace.
	Node *yaml.Node
}

// ContainerImages lists the scalar image: field of every item of every
// containers, initContainers and ephemeralContainers list of f's
// documents, at any depth, in document order.
func (f *File) ContainerImages() []ImageField {
	var out []ImageField
	for di, doc := range f.docs {
		walkContainerImages(doc, "", func(path string, img *yaml.Node) {
			if img.Kind == yaml.ScalarNode {
				out = append(out, ImageField{Document: di, Path: path, Node: img})
			}
		})
	}
	return out
}

// PatchImages lists the images a patch sets: the image: of every container
// of a strategic-merge patch, and the images a JSON 6902 patch adds or
// replaces (a container added to a containers list, or an image field
// itself). The patch may hold several documents; what does not parse ends
// the list. An image may be listed twice: use the list as a set.
func PatchImages(data []byte) []string {
	var images []string
	visit := func(_ string, img *yaml.Node) {
		if img.Kind == yaml.ScalarNode {
			images = append(images, img.Value)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			break // the end, or no YAML: no containers to find
		}
		walkContainerImages(&n, "", visit)
		jsonPatchImages(&n, visit)
	}
	return images
}

// walkContainerImages visits the image node of every item of every
// containers, initContainers and ephemeralContainers list, at any depth.
func walkContainerImages(n *yaml.Node, path string, visit func(string, *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkContainerImages(c, path, visit)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if v.Kind == yaml.SequenceNode && isContainerList(k.Value) {
				for j, item := range v.Content {
					if item.Kind != yaml.MappingNode {
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
	case yaml.SequenceNode:
		for j, c := range n.Content {
			walkContainerImages(c, fmt.Sprintf("%s[%d]", path, j), visit)
		}
	}
}

// jsonPatchImages visits the images a JSON 6902 patch adds or replaces: a
// container added to a containers list, or an image field itself.
func jsonPatchImages(doc *yaml.Node, visit func(string, *yaml.Node)) {
	ops := doc
	if ops.Kind == yaml.DocumentNode && len(ops.Content) == 1 {
		ops = ops.Content[0]
	}
	if ops.Kind != yaml.SequenceNode {
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
		case isContainerList(parts[len(parts)-1]) && value.Kind == yaml.SequenceNode:
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

func isContainerList(k string) bool { return slices.Contains(render.PodSpecContainerFields, k) }

// SplitImage splits an image reference into name and tag the way kustomize
// does, ignoring a digest: the tag is after the last ":" of the last path
// element ("" when none).
func SplitImage(image string) (name, tag string) {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i+1:]
	}
	return image, ""
}

// ImageName is the image reference without its tag and digest, the name
// kustomize's images: matches.
func ImageName(image string) string {
	n, _ := SplitImage(image)
	return n
}

// JoinImage is the reference name:tag (name alone when tag is "").
func JoinImage(name, tag string) string {
	if tag == "" {
		return name
	}
	return name + ":" + tag
}
