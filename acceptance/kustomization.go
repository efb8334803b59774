package acceptance

import (
	"errors"
	"fmt"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// addResource returns the kustomization data (of file, named in errors)
// with resource appended to its resources, unchanged when it is listed
// already. It edits the text where the entry goes and nothing else, so the
// author's comments, indentation, quoting, flow style and blank lines stay:
// a line after the last item of a block list (with the first item's
// indentation), the entry before the closing bracket of a flow list, a line
// after an empty "resources:", or a new resources list at the end.
func addResource(data []byte, file, resource string) ([]byte, error) {
	out, err := editResources(data, file, resource)
	if err != nil || string(out) == string(data) {
		return out, err
	}
	// The edit is text: hold it to what it must mean.
	if !lists(out, resource) {
		return nil, fmt.Errorf("adding %s to %s: its resources cannot be edited in place: list it by hand", resource, file)
	}
	return out, nil
}

// lists reports whether the kustomization data parses and lists resource
// in its resources.
func lists(data []byte, resource string) bool {
	rn, err := kyaml.Parse(string(data))
	if err != nil {
		return false
	}
	list, err := rn.Pipe(kyaml.Lookup("resources"))
	if err != nil || list == nil || list.YNode().Kind != kyaml.SequenceNode {
		return false
	}
	for _, e := range list.YNode().Content {
		if e.Value == resource {
			return true
		}
	}
	return false
}

func editResources(data []byte, file, resource string) ([]byte, error) {
	rn, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	root := rn.YNode()
	if root.Kind == kyaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != kyaml.MappingNode {
		return nil, &exitcode.InvalidInput{File: file, Err: errors.New("not a mapping")}
	}
	var key, val *kyaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "resources" {
			key, val = root.Content[i], root.Content[i+1]
		}
	}
	text := string(data)
	switch {
	case key == nil && root.Style&kyaml.FlowStyle == 0:
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		indent := ""
		if len(root.Content) > 0 {
			indent = strings.Repeat(" ", root.Content[0].Column-1)
		}
		return []byte(text + indent + "resources:\n" + indent + "- " + resource + "\n"), nil
	case key == nil:
		return nil, fmt.Errorf("adding %s to %s: a flow mapping cannot be edited in place: list it by hand", resource, file)
	case val.Kind == kyaml.ScalarNode && val.Tag == "!!null" && val.Value == "":
		return insertLine(text, key.Line, strings.Repeat(" ", key.Column-1)+"- "+resource), nil
	case val.Kind != kyaml.SequenceNode:
		return nil, &exitcode.InvalidInput{File: file, Err: errors.New("field resources: not a list")}
	}
	for _, e := range val.Content {
		if e.Value == resource {
			return data, nil
		}
		if e.Kind != kyaml.ScalarNode {
			return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("field resources: line %d: not a file name", e.Line)}
		}
	}
	if val.Style&kyaml.FlowStyle != 0 {
		out, ok := insertFlow(text, val, resource)
		if !ok {
			return nil, fmt.Errorf("adding %s to %s: the flow list of resources at line %d cannot be edited in place: list it by hand",
				resource, file, val.Line)
		}
		return []byte(out), nil
	}
	lines := strings.SplitAfter(text, "\n")
	first, last := val.Content[0], val.Content[len(val.Content)-1]
	prefix := lines[first.Line-1][:first.Column-1]
	if strings.TrimSpace(prefix) != "-" || strings.Contains(last.Value, "\n") {
		return nil, fmt.Errorf("adding %s to %s: the resources list at line %d cannot be edited in place: list it by hand", resource, file, val.Line)
	}
	return insertLine(text, last.Line, prefix+resource), nil
}

// insertLine inserts line after the 1-based line n of text.
func insertLine(text string, n int, line string) []byte {
	lines := strings.SplitAfter(text, "\n")
	if !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += "\n"
	}
	out := strings.Join(lines[:n], "") + line + "\n" + strings.Join(lines[n:], "")
	return []byte(out)
}

// insertFlow adds resource before the closing bracket of the flow list
// val: "[a, b]" -> "[a, b, resource]", "[]" -> "[resource]", and a list
// whose bracket sits on its own line after a trailing comma gets a line of
// its own with the last item's indentation.
func insertFlow(text string, val *kyaml.Node, resource string) (string, bool) {
	lines := strings.SplitAfter(text, "\n")
	offset := func(line, col int) int {
		n := 0
		for _, l := range lines[:line-1] {
			n += len(l)
		}
		return n + col - 1
	}
	start := offset(val.Line, val.Column) // the '['
	if start >= len(text) || text[start] != '[' {
		return "", false
	}
	pos := start + 1
	if len(val.Content) > 0 {
		last := val.Content[len(val.Content)-1]
		pos = offset(last.Line, last.Column)
		switch last.Style {
		case kyaml.DoubleQuotedStyle, kyaml.SingleQuotedStyle:
			q := text[pos]
			end := strings.IndexByte(text[pos+1:], q)
			if end < 0 {
				return "", false
			}
			pos += end + 2
		default:
			pos += len(last.Value)
		}
	}
	rest := text[pos:]
	i := 0
	comma := false
	for i < len(rest) && strings.ContainsRune(" \t\r\n,", rune(rest[i])) {
		comma = comma || rest[i] == ','
		i++
	}
	if i >= len(rest) || rest[i] != ']' {
		return "", false
	}
	closing := pos + i
	switch {
	case len(val.Content) == 0:
		return text[:closing] + resource + text[closing:], true
	case !comma:
		return text[:pos] + ", " + resource + text[pos:], true
	}
	// "[\n  a,\n  b,\n]": a line like the last item's before the bracket.
	lineStart := strings.LastIndexByte(text[:closing], '\n') + 1
	if strings.TrimSpace(text[lineStart:closing]) != "" {
		return text[:closing] + " " + resource + text[closing:], true
	}
	last := val.Content[len(val.Content)-1]
	indent := strings.Repeat(" ", last.Column-1)
	return text[:lineStart] + indent + resource + ",\n" + text[lineStart:], true
}
