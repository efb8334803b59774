package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The parsing limits of the renderer, in one place (doc.go states what they
// guarantee). Every file krusty or the plain-manifest reader reads passes
// through ConfinedFS.ReadFile, which applies all of them before it returns
// the bytes.
const (
	// DefaultMaxFileSize caps every file the renderer reads. Kubernetes
	// objects are limited to about 1.5 MiB by etcd, so a manifest file far
	// above that is a mistake or an attack.
	DefaultMaxFileSize = 8 << 20
	// DefaultMaxTotalRead caps the bytes one render may read in all, so a
	// kustomization cannot make the renderer read an unbounded number of
	// files just under the per-file cap.
	DefaultMaxTotalRead = 256 << 20
	// MaxYAMLAliasNodes caps the nodes that expanding aliases adds to the
	// files of one render, all together (one file's cap would let a
	// kustomization list a thousand small bombs). kyaml expands every alias (kio.ByteReader with
	// AnchorsAweigh, RNode.DeAnchor) by copying the anchored node, so a
	// few hundred bytes of nested aliases become billions of nodes; yaml.v3
	// refuses "excessive aliasing" only when it decodes into Go values, not
	// when it builds the node tree kyaml uses. Hand-written anchors (shared
	// labels, a merged mapping) add a few hundred nodes; at the cap a
	// render peaks near 100 MiB.
	MaxYAMLAliasNodes = 20_000
	// MaxYAMLDepth caps the nesting of a YAML document (each mapping,
	// sequence or alias level counts one). Kubernetes objects, CRD schemas
	// included, nest a few dozen levels; yaml.v3's scanner stops at 10000.
	MaxYAMLDepth = 1000
	// DefaultMaxMemory caps the memory of the child process that runs
	// krusty (Worker): what its Go runtime maps (heap, stacks, metadata),
	// watched by the child itself (watchMemory), with RLIMIT_DATA above it
	// as the kernel's backstop (kernelMemoryLimit). A render at the parsing limits peaks near 100 MiB,
	// 1500 Deployments with 1500 patch files at 110 MB; the cap keeps one
	// render, with its parent (about 70 MB) and argocd-cmp-server, under
	// the plugin sidecar's 512Mi container limit, so a render that grows
	// past it fails alone (exit 4) instead of the container being
	// OOM-killed; and the largest process of a generate under 300 MiB
	// resident whatever the input (the cap counts the heap, not the
	// binary's code). THROUGHLINE_RENDER_MEMORY_MIB sets another.
	DefaultMaxMemory = 256 << 20
)

// ErrYAMLLimit is wrapped by every refusal of a file that exceeds the
// parsing limits (alias expansion or nesting).
var ErrYAMLLimit = errors.New("YAML exceeds the parsing limits")

// CheckYAML checks every document of data against the parsing limits
// (MaxYAMLAliasNodes, MaxYAMLDepth) with a walk over yaml.v3's node tree
// that visits at most the file's own nodes plus MaxYAMLAliasNodes. Data that
// is not YAML (an env file, a generator's file source) is not refused here:
// its reader reports it, and only the size caps apply. Documents before a
// syntax error are still checked, as a reader decodes them before it meets
// the error.
func CheckYAML(data []byte) error {
	_, _, err := scanYAML(data, false, MaxYAMLAliasNodes)
	return err
}

// scanYAML is CheckYAML with budget nodes of alias expansion left; it
// returns the nodes expansion adds and, when secrets is set, the values of
// every Secret's data and stringData in data (secretValues).
func scanYAML(data []byte, secrets bool, budget int) (vals []string, aliasNodes int, err error) {
	if !mayNeedScan(data, secrets) {
		return nil, 0, nil
	}
	w := limitWalk{budget: budget}
	vals, complete, err := w.stream(data, secrets, nil)
	if err != nil || complete {
		return vals, w.aliasNodes, err
	}
	// Not YAML from some point on. kyaml's reader splits the stream at
	// "---" lines itself and decodes the first document of each part with
	// a fresh decoder, so a part after the broken one is still expanded:
	// check every part the same way.
	for i, part := range documentSeparator.Split(string(data), -1) {
		if vals, _, err = w.stream([]byte(part), secrets, vals); err != nil {
			return nil, 0, fmt.Errorf("part %d: %w", i+1, err)
		}
	}
	return vals, w.aliasNodes, nil
}

// documentSeparator is where kyaml's kio.ByteReader splits a stream.
var documentSeparator = regexp.MustCompile(`(?m)^---.*$`)

// stream checks the documents of data with w until the end or the first
// syntax error (complete is false then), appending Secret values to vals.
func (w *limitWalk) stream(data []byte, secrets bool, vals []string) (_ []string, complete bool, _ error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return vals, errors.Is(err, io.EOF), nil
		}
		if err := w.walk(&n, 0, false); err != nil {
			return nil, false, fmt.Errorf("document %d: %w", doc, err)
		}
		if secrets {
			vals = secretValues(&n, vals)
		}
	}
}

// mayNeedScan reports whether data can hold anything scanYAML looks for:
// aliases need a '*', nesting deeper than MaxYAMLDepth needs that many
// brackets or that much indentation, a Secret needs its kind. Most files
// have none of these, and parsing them twice (here and in krusty) would
// cost as much as the render.
func mayNeedScan(data []byte, secrets bool) bool {
	if bytes.IndexByte(data, '*') >= 0 {
		return true
	}
	// A kind can be spelled with escapes ("\x53ecret").
	if secrets && (bytes.Contains(data, []byte("Secret")) || bytes.IndexByte(data, '\\') >= 0) {
		return true
	}
	// Depth <= brackets + longest line + 2 (document, root): both under
	// half the cap keeps the depth under it.
	if bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) >= MaxYAMLDepth/2-2 {
		return true
	}
	return maxLineLength(data) >= MaxYAMLDepth/2-2
}

// maxLineLength is the length of the longest line of data. Block nesting
// of depth d needs a line indented by about d columns or d "- " markers on
// one line.
func maxLineLength(data []byte) int {
	longest := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data)
		}
		longest = max(longest, i)
		data = data[min(i+1, len(data)):]
	}
	return longest
}

// limitWalk counts the nodes alias expansion adds and the nesting depth.
type limitWalk struct {
	aliasNodes, budget int
}

func (w *limitWalk) walk(n *yaml.Node, depth int, underAlias bool) error {
	if depth > MaxYAMLDepth {
		return fmt.Errorf("%w: nesting deeper than %d levels (line %d)", ErrYAMLLimit, MaxYAMLDepth, n.Line)
	}
	if underAlias {
		if w.aliasNodes++; w.aliasNodes > w.budget {
			return fmt.Errorf("%w: expanding its aliases adds more than the %d nodes a render allows (an alias bomb?)",
				ErrYAMLLimit, MaxYAMLAliasNodes)
		}
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil
		}
		return w.walk(n.Alias, depth+1, true)
	}
	for _, c := range n.Content {
		if err := w.walk(c, depth+1, underAlias); err != nil {
			return err
		}
	}
	return nil
}
