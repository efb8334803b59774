package render

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// Redacted replaces a Secret's value in every message of the renderer.
const Redacted = "<redacted>"

// minSubstringRedaction: values at least this long are redacted wherever
// they occur in a message; shorter ones only as a whole word, so that a
// one-character value does not take every letter of the message with it.
const minSubstringRedaction = 4

// secretSet is the values of the Secrets a render has read (data and
// stringData of every Secret in a file read through the confined
// filesystem; secretGenerator literals, env values and file contents), for
// redact.
type secretSet struct {
	mu   sync.Mutex
	vals map[string]bool
}

func (s *secretSet) add(vals ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals == nil {
		s.vals = map[string]bool{}
	}
	for _, v := range vals {
		for _, c := range redactionForms(v) {
			s.vals[c] = true
		}
	}
}

// values are the spellings s redacts, longest first.
func (s *secretSet) values() []string {
	s.mu.Lock()
	vals := make([]string, 0, len(s.vals))
	for v := range s.vals {
		vals = append(vals, v)
	}
	s.mu.Unlock()
	sort.Slice(vals, func(i, j int) bool {
		if len(vals[i]) != len(vals[j]) {
			return len(vals[i]) > len(vals[j])
		}
		return vals[i] < vals[j]
	})
	return vals
}

// redactionForms are the spellings of v a message can quote: as written,
// trimmed, line by line (a YAML block scalar), base64-encoded (a generated
// Secret's data) and decoded (a data value), and escaped in a quoted
// string.
func redactionForms(v string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	add(v)
	for l := range strings.SplitSeq(v, "\n") {
		add(l)
	}
	add(base64.StdEncoding.EncodeToString([]byte(v)))
	if d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v)); err == nil {
		add(string(d))
		for l := range strings.SplitSeq(string(d), "\n") {
			add(l)
		}
	}
	if q := strconv.Quote(v); len(q) > 2 {
		add(q[1 : len(q)-1])
	}
	return out
}

// redact returns msg with every known Secret value replaced by Redacted,
// and whether anything was replaced. Longer values go first, so a value
// that contains another is replaced whole.
func (s *secretSet) redact(msg string) (string, bool) {
	out := msg
	for _, v := range s.values() {
		if len(v) >= minSubstringRedaction {
			out = strings.ReplaceAll(out, v, Redacted)
		} else {
			out = replaceWord(out, v)
		}
	}
	return out, out != msg
}

// replaceWord replaces the occurrences of w in s that are not part of a
// longer word.
func replaceWord(s, w string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, w)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(w)
		if (i == 0 || !isWordByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
			b.WriteString(s[:i])
			b.WriteString(Redacted)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// secretValues appends to vals the scalar values under data and stringData
// of every mapping in the tree n whose kind is Secret (a document, a List
// item, an embedded template), following aliases. The tree has passed the
// parsing limits.
func secretValues(n *yaml.Node, vals []string) []string {
	if n == nil {
		return vals
	}
	if n.Kind == yaml.AliasNode {
		return secretValues(n.Alias, vals)
	}
	if n.Kind == yaml.MappingNode && isSecret(n) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k == "data" || k == "stringData" {
				vals = scalars(n.Content[i+1], vals)
			}
		}
	}
	for _, c := range n.Content {
		vals = secretValues(c, vals)
	}
	return vals
}

func isSecret(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; k.Value == "kind" && v.Kind == yaml.ScalarNode && v.Value == "Secret" {
			return true
		}
	}
	return false
}

// scalars appends every scalar value (not mapping keys) under n.
func scalars(n *yaml.Node, vals []string) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return append(vals, n.Value)
	case yaml.AliasNode:
		if n.Alias != nil {
			return scalars(n.Alias, vals)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			vals = scalars(n.Content[i], vals)
		}
	default:
		for _, c := range n.Content {
			vals = scalars(c, vals)
		}
	}
	return vals
}

// redactedError is an error whose message had Secret values replaced. It
// keeps the original's exit code and sentinels (errors.Is) but does not
// unwrap to it, so no caller can print the original message.
type redactedError struct {
	msg  string
	orig error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.orig, target) }
func (e *redactedError) ExitCode() int        { return exitcode.Code(e.orig) }

// redactErr returns err with every Secret value of s replaced (err itself
// when its message holds none). A top-level *exitcode.InvalidInput stays
// one, with its file.
func (s *secretSet) redactErr(err error) error {
	if err == nil {
		return nil
	}
	if _, changed := s.redact(err.Error()); !changed {
		return err
	}
	if ii, ok := err.(*exitcode.InvalidInput); ok && ii.Err != nil { //nolint:errorlint // only a top-level one keeps its kind

		msg, _ := s.redact(ii.Err.Error())
		file, _ := s.redact(ii.File)
		return &exitcode.InvalidInput{File: file, Err: &redactedError{msg: msg, orig: ii.Err}}
	}
	msg, _ := s.redact(err.Error())
	return &redactedError{msg: msg, orig: err}
}

// duplicateKey finds the first mapping key defined twice in the tree n and
// names its field and lines, never the values (yaml.v3 and kyaml quote the
// whole resource around the same error).
func duplicateKey(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			if err := duplicateKey(c, p); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			field := strings.TrimPrefix(path+"."+k.Value, ".")
			if line, dup := seen[k.Value]; dup && k.Kind == yaml.ScalarNode {
				return fmt.Errorf("field %s: key defined twice (lines %d and %d)", field, line, k.Line)
			}
			seen[k.Value] = k.Line
			if err := duplicateKey(n.Content[i+1], field); err != nil {
				return err
			}
		}
	}
	return nil
}

// Redactor replaces the values of the Secrets a render read or produced
// in a message. It is the one redaction of every message that leaves
// render (Build's errors), policy (violations) and the gates built on them:
// a value copied out of a Secret (kustomize replacements, a template) into
// an image, a name or a label is shown as Redacted wherever it is quoted.
// A nil *Redactor redacts nothing.
type Redactor struct {
	set    *secretSet
	public []string
}

// Redactor redacts the Secrets the app's render read and, after Build, those
// it produced.
func (a *App) Redactor() *Redactor { return &Redactor{set: &a.FS.secrets} }

// NewRedactor redacts the values of the Secrets among objs.
func NewRedactor(objs []Object) *Redactor {
	r := &Redactor{set: &secretSet{}}
	r.Add(objs)
	return r
}

// Add makes r redact the values of the Secrets among objs too.
func (r *Redactor) Add(objs []Object) {
	if r == nil {
		return
	}
	r.set.add(objectSecretValues(objs)...)
}

// Public is r that leaves alone the values the strings shown beside the
// message already hold (the repository path a violation names: a Secret
// whose username is the app's name reveals nothing there, and the message
// stays readable).
func (r *Redactor) Public(shown ...string) *Redactor {
	if r == nil {
		return nil
	}
	return &Redactor{set: r.set, public: append(append([]string(nil), r.public...), shown...)}
}

// String is s with every Secret value replaced by Redacted.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	if len(r.public) == 0 {
		out, _ := r.set.redact(s)
		return out
	}
	secret := secretSet{vals: map[string]bool{}}
	for _, v := range r.set.values() {
		if !r.shown(v) {
			secret.vals[v] = true
		}
	}
	out, _ := secret.redact(s)
	return out
}

// shown reports whether a public string holds v.
func (r *Redactor) shown(v string) bool {
	for _, p := range r.public {
		if strings.Contains(p, v) {
			return true
		}
	}
	return false
}

// Err is err with every Secret value replaced (err itself when its message
// holds none), keeping its exit code.
func (r *Redactor) Err(err error) error {
	if r == nil {
		return err
	}
	return r.set.redactErr(err)
}

// objectSecretValues are the scalar values under data (as written: base64,
// whose decoded form redactionForms adds) and stringData of every v1 Secret
// among objs.
func objectSecretValues(objs []Object) []string {
	var vals []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			vals = append(vals, v)
		case nil:
		default:
			vals = append(vals, fmt.Sprint(v))
		}
	}
	for _, o := range objs {
		if kind, _ := o.Map["kind"].(string); kind != "Secret" {
			continue
		}
		if api, _ := o.Map["apiVersion"].(string); api != "v1" {
			continue
		}
		walk(o.Map["data"])
		walk(o.Map["stringData"])
	}
	return vals
}
