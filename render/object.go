package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// Object is one rendered Kubernetes object as JSON-compatible values, with
// the file it came from (relative to the repository root) for messages.
type Object struct {
	Map    map[string]any
	Source string
}

// ID is the identity of an object in a render: two objects with the same
// group, kind, namespace and name cannot both be applied.
type ID struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String reads like kubectl: Kind.group namespace/name.
func (id ID) String() string {
	k := id.Kind
	if id.Group != "" {
		k += "." + id.Group
	}
	if id.Namespace != "" {
		return k + " " + id.Namespace + "/" + id.Name
	}
	return k + " " + id.Name
}

// APIVersion joins group and version.
func (id ID) APIVersion() string {
	if id.Group == "" {
		return id.Version
	}
	return id.Group + "/" + id.Version
}

// ID returns the object's identity.
func (o Object) ID() ID {
	apiVersion, _ := o.Map["apiVersion"].(string)
	kind, _ := o.Map["kind"].(string)
	group, version := "", apiVersion
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group, version = apiVersion[:i], apiVersion[i+1:]
	}
	id := ID{Group: group, Version: version, Kind: kind}
	if md, ok := o.Map["metadata"].(map[string]any); ok {
		id.Name, _ = md["name"].(string)
		id.Namespace, _ = md["namespace"].(string)
	}
	return id
}

// DecodeManifests parses a YAML or JSON stream (one or more documents) from
// file into objects. Empty documents are skipped and v1 Lists are expanded.
// Every document must be a mapping with apiVersion, kind and metadata.name;
// anything else is an *exitcode.InvalidInput naming the file and document.
func DecodeManifests(data []byte, file string) ([]Object, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &exitcode.InvalidInput{File: file, Err: errors.New("binary file: not YAML or JSON")}
	}
	nodes, err := (&kio.ByteReader{
		Reader:                bytes.NewReader(data),
		OmitReaderAnnotations: true,
		PreserveSeqIndent:     false,
	}).Read()
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("parsing YAML: %w", err)}
	}
	var out []Object
	for i, n := range nodes {
		if n.IsNilOrEmpty() {
			continue
		}
		if n.YNode().Kind != yaml.MappingNode {
			return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("document %d: not a mapping", i+1)}
		}
		m, err := n.Map()
		if err != nil {
			err = mapError(n.YNode(), err)
			if id := nodeID(n); id != "" {
				err = fmt.Errorf("%s: %w", id, err)
			}
		} else {
			err = stringKeys(m, "")
		}
		if err != nil {
			return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("document %d: %w", i+1, err)}
		}
		objs, err := expandList(m, file, i+1)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// mapError is the error of decoding the object n into a map without the
// copy of the whole object kyaml appends (Secret values included): a
// duplicated key names its field and lines, any other error is the
// decoder's own.
func mapError(n *yaml.Node, err error) error {
	if dup := duplicateKey(n, ""); dup != nil {
		return dup
	}
	if strings.Contains(err.Error(), "for the following resource") {
		if u := errors.Unwrap(err); u != nil {
			return u
		}
		return errors.New("the object does not decode")
	}
	return err
}

// nodeID is "Kind namespace/name" of the object n for messages ("" when
// it has no kind).
func nodeID(n *yaml.RNode) string {
	kind := n.GetKind()
	if kind == "" {
		return ""
	}
	if ns := n.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + n.GetName()
	}
	return kind + " " + n.GetName()
}

// stringKeys refuses mappings with keys that are not strings (YAML decodes
// `{1: a}` into map[any]any): a Kubernetes object has string keys only, and
// such an object could be neither hashed nor printed as JSON. The error names
// the field and says how to fix it.
func stringKeys(v any, path string) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if err := stringKeys(e, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := stringKeys(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case map[any]any:
		for k := range v {
			if _, ok := k.(string); !ok {
				return fmt.Errorf("field %s: mapping key %v is not a string (quote it: \"%v\")", strings.TrimPrefix(path, "."), k, k)
			}
		}
		return fmt.Errorf("field %s: mapping is not keyed by strings", strings.TrimPrefix(path, "."))
	}
	return nil
}

func expandList(m map[string]any, file string, doc int) ([]Object, error) {
	kind, _ := m["kind"].(string)
	if items, ok := m["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		var out []Object
		for j, it := range items {
			im, ok := it.(map[string]any)
			if !ok {
				return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("document %d: items[%d]: not a mapping", doc, j)}
			}
			objs, err := expandList(im, file, doc)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	o := Object{Map: m, Source: file}
	if err := validateIdentity(o); err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("document %d: %w", doc, err)}
	}
	return []Object{o}, nil
}

func validateIdentity(o Object) error {
	if v, ok := o.Map["apiVersion"].(string); !ok || v == "" {
		return errors.New("field apiVersion: missing or not a string")
	}
	if v, ok := o.Map["kind"].(string); !ok || v == "" {
		return errors.New("field kind: missing or not a string")
	}
	md, ok := o.Map["metadata"].(map[string]any)
	if !ok {
		return errors.New("field metadata: missing or not a mapping")
	}
	if v, ok := md["name"].(string); !ok || v == "" {
		return fmt.Errorf("%s: field metadata.name: missing or not a string", o.Map["kind"])
	}
	if v, ok := md["namespace"]; ok {
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s %v: field metadata.namespace: not a string", o.Map["kind"], md["name"])
		}
	}
	return nil
}

// EncodeYAML writes objects as a YAML stream, "---" between documents.
func EncodeYAML(w io.Writer, objs []Object) error {
	for i, o := range objs {
		n, err := yaml.FromMap(o.Map)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", o.ID(), err)
		}
		s, err := n.String()
		if err != nil {
			return fmt.Errorf("encoding %s: %w", o.ID(), err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return fmt.Errorf("writing manifests: %w", err)
			}
		}
		if _, err := io.WriteString(w, s); err != nil {
			return fmt.Errorf("writing manifests: %w", err)
		}
	}
	return nil
}
