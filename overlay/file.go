package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/throughline-dev/throughline/exitcode"
	yaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// File is a YAML file being edited in place: its text, its parsed documents
// and the edits planned so far. The zero value is not usable; use Parse.
type File struct {
	name  string
	data  []byte
	docs  []*yaml.Node
	edits []textEdit
}

// textEdit replaces data[start:end] with text (an insertion when start == end).
type textEdit struct {
	start, end int
	text       string
}

// errOverlap: two planned edits overlap (Bytes wraps it, naming the file).
var errOverlap = errors.New("overlapping edits")

// NotCleanError is returned by Bytes when the edited text does not parse to
// the planned documents: the edit cannot be made in place. Err says how the
// documents differ.
type NotCleanError struct {
	File string
	Err  error
}

func (e *NotCleanError) Error() string {
	return fmt.Sprintf("%s: the edited text does not parse to the planned documents: %v", e.File, e.Err)
}

func (e *NotCleanError) Unwrap() error { return e.Err }

// Parse parses data, the content of the file name (used in errors only),
// into its YAML documents. A document that does not parse is a
// *exitcode.InvalidInput naming the file.
func Parse(name string, data []byte) (*File, error) {
	f := &File{name: name, data: data}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, &exitcode.InvalidInput{File: name, Err: err}
		}
		f.docs = append(f.docs, &n)
	}
	return f, nil
}

// Name is the file name given to Parse.
func (f *File) Name() string { return f.name }

// Documents are the parsed documents as planned: each edit already shows in
// them. Change them only through the File's methods.
func (f *File) Documents() []*yaml.Node { return f.docs }

// Edited reports whether any edit is planned.
func (f *File) Edited() bool { return len(f.edits) > 0 }

// Replace plans the replacement of the text of the scalar n, a node of
// f's documents, with value, keeping its quoting (plain, single or double
// quoted), and sets n to the string value. The value is written as is:
// one the quoting cannot carry makes Bytes fail.
func (f *File) Replace(n *yaml.Node, value string) error {
	start, err := f.lineStart(n.Line)
	if err != nil {
		return err
	}
	// Column counts characters, not bytes.
	for c := 1; c < n.Column; c++ {
		if start >= len(f.data) {
			return fmt.Errorf("%s:%d:%d: column is past the end of the line", f.name, n.Line, n.Column)
		}
		_, size := utf8.DecodeRune(f.data[start:])
		start += size
	}
	end := -1
	var text string
	switch n.Style {
	case yaml.DoubleQuotedStyle:
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
	case yaml.SingleQuotedStyle:
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
		return fmt.Errorf("%s:%d:%d: cannot edit the value %q in place (write it as a plain or quoted scalar)", f.name, n.Line, n.Column, n.Value)
	}
	f.edits = append(f.edits, textEdit{start: start, end: end, text: text})
	n.Value, n.Tag = value, "!!str"
	return nil
}

// insertKey plans a "key: value" line right after the first key of the
// block mapping m, indented like that key; quoted writes the value
// double-quoted.
func (f *File) insertKey(m *yaml.Node, key, value string, quoted bool) error {
	first := m.Content[0]
	v := value
	if quoted {
		v = quoteYAML(value)
	}
	text := strings.Repeat(" ", first.Column-1) + key + ": " + v + "\n"
	at, err := f.lineStart(first.Line + 1)
	if err != nil {
		return err
	}
	f.edits = append(f.edits, textEdit{start: at, end: at, text: text})
	m.Content = append(m.Content, strNode(key), strNode(value))
	return nil
}

// Bytes applies the planned edits to the text and checks that the result
// parses to exactly the planned documents (compared as plain values): a
// *NotCleanError when it does not, an error naming the file when two edits
// overlap. With no edit it returns the text unchanged.
func (f *File) Bytes() ([]byte, error) {
	out, err := applyEdits(f.data, f.edits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.name, err)
	}
	if err := sameDocuments(out, f.docs); err != nil {
		return nil, &NotCleanError{File: f.name, Err: err}
	}
	return out, nil
}

// line returns line n (1-based) without its newline.
func (f *File) line(n int) string {
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
func (f *File) lineStart(n int) (int, error) {
	off := 0
	for l := 1; l < n; l++ {
		i := bytes.IndexByte(f.data[off:], '\n')
		if i < 0 {
			if l == n-1 {
				return len(f.data), nil
			}
			return 0, fmt.Errorf("%s: line %d is past the end of the file", f.name, n)
		}
		off += i + 1
	}
	return off, nil
}

func applyEdits(data []byte, edits []textEdit) ([]byte, error) {
	sorted := append([]textEdit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].start < sorted[j].start })
	var out bytes.Buffer
	prev := 0
	for _, e := range sorted {
		if e.start < prev || e.end < e.start || e.end > len(data) {
			return nil, errOverlap
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
func sameDocuments(data []byte, want []*yaml.Node) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
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

func mapLookup(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func nextKey(m, key *yaml.Node) *yaml.Node {
	for i := 0; i+2 < len(m.Content); i += 2 {
		if m.Content[i] == key {
			return m.Content[i+2]
		}
	}
	return nil
}

func strNode(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}

// quoteYAML double-quotes an image value (references are plain ASCII).
func quoteYAML(s string) string { return `"` + s + `"` }
