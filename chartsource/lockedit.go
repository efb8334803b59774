package chartsource

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	yaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// lockHeader starts a lock file pin creates.
const lockHeader = `# Remote Helm charts of this directory, pinned by digest: written by
# "throughline pin", read by the render (docs/charts.md). A digest change here
# is an artifact change: review it like an image digest.
apiVersion: ` + LockAPIVersion + `
kind: ` + LockKind + `
charts:
`

// UpdateLock returns the lock file file (data, nil when it does not exist
// yet) with every entry of pins written in, and the changes made, one line
// each. Only the edited values change: comments, order, quoting and
// indentation are kept, new entries are appended to charts. An entry for
// the same chart version with another digest is refused (rule
// chart-version-moved, naming both digests): the source replaced the
// package of a pinned version. An entry for another version of the same
// chart and repository that no pin keeps is moved to the new version in
// place. The result is parsed again and must hold exactly the planned
// entries.
func UpdateLock(file string, data []byte, pins []Entry) ([]byte, []string, error) {
	var old *Lock
	if data == nil {
		data, old = []byte(lockHeader), &Lock{APIVersion: LockAPIVersion, Kind: LockKind, File: file}
	} else {
		var err error
		if old, err = ParseLock(file, data); err != nil {
			return nil, nil, err
		}
	}
	plan := append([]Entry(nil), old.Charts...)
	var changes []string
	var edits []scalarEdit
	var added []Entry
	keep := map[Ref]bool{}
	for _, p := range pins {
		keep[p.Ref()] = true
	}
	for _, p := range pins {
		if e, ok := old.Find(p.Ref()); ok {
			if e.Digest != p.Digest {
				return nil, nil, &exitcode.Refusal{Rule: RuleChartVersionMoved, File: file, Object: p.Ref().String(),
					Field: fmt.Sprintf("charts[%d].digest", old.index(e)),
					Reason: fmt.Sprintf("REJECTED chart version %s resolved to %s and %s: the source replaced the package of a pinned version",
						p.Ref(), e.Digest, p.Digest)}
			}
			continue
		}
		if i := replaceable(plan, p, keep); i >= 0 {
			edits = append(edits, scalarEdit{i, "version", p.Version}, scalarEdit{i, "digest", p.Digest})
			changes = append(changes, fmt.Sprintf("%s: chart %s/%s %s -> %s@%s", file, p.Repo, p.Name, plan[i].Version, p.Version, p.Digest))
			plan[i].Version, plan[i].Digest = p.Version, p.Digest
			continue
		}
		added = append(added, p)
		plan = append(plan, p)
		changes = append(changes, fmt.Sprintf("%s: chart %s -> %s", file, p.Ref(), p.Digest))
	}
	if len(edits) == 0 && len(added) == 0 {
		return data, nil, nil
	}
	out, err := editLock(file, data, edits, added)
	if err != nil {
		return nil, nil, err
	}
	got, err := ParseLock(file, out)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the edited lock file does not parse (edit it by hand): %w", file, err)
	}
	if fmt.Sprint(got.Charts) != fmt.Sprint(plan) {
		return nil, nil, fmt.Errorf("%s: the edited lock file does not hold the planned entries (edit it by hand)", file)
	}
	return out, changes, nil
}

// replaceable is the index of the entry of p's chart (same repository and
// name, another version) that no pin keeps, or -1.
func replaceable(plan []Entry, p Entry, keep map[Ref]bool) int {
	for i, e := range plan {
		if sameRepo(e.Repo, p.Repo) && e.Name == p.Name && e.Version != p.Version && !keep[e.Ref()] {
			return i
		}
	}
	return -1
}

// scalarEdit sets key of charts[item] to value.
type scalarEdit struct {
	item       int
	key, value string
}

// editLock applies the scalar edits and appends the added entries to the
// charts list, as text.
func editLock(file string, data []byte, edits []scalarEdit, added []Entry) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("not one YAML document: %w", err)}
	}
	if len(doc.Content) != 1 {
		return nil, &exitcode.InvalidInput{File: file, Err: errors.New("not one YAML document")}
	}
	root := doc.Content[0]
	var charts *yaml.Node
	next := -1 // line of the key after charts, -1 when charts is last
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "charts" {
			charts = root.Content[i+1]
			if i+2 < len(root.Content) {
				next = root.Content[i+2].Line
			}
		}
	}
	if charts == nil {
		return nil, &exitcode.InvalidInput{File: file, Err: errors.New("field charts: missing")}
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	// Edit from the bottom up: earlier positions stay valid.
	sort.Slice(edits, func(i, j int) bool { return edits[i].item > edits[j].item })
	for _, e := range edits {
		n := mapValue(charts.Content[e.item], e.key)
		if n == nil || n.Line < 1 || n.Line > len(lines) {
			return nil, fmt.Errorf("%s: charts[%d].%s cannot be edited in place", file, e.item, e.key)
		}
		l, err := replaceScalar(lines[n.Line-1], n, e.value)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n.Line, err)
		}
		lines[n.Line-1] = l
	}
	if len(added) == 0 {
		return []byte(strings.Join(lines, "")), nil
	}
	indent := "  "
	if len(charts.Content) > 0 {
		if charts.Style&yaml.FlowStyle != 0 {
			return nil, fmt.Errorf("%s: charts is a flow list: write it as a block list to let pin append to it", file)
		}
		indent = strings.Repeat(" ", max(charts.Content[0].Column-3, 0))
	} else {
		// charts: [] or charts: (empty): the key's line becomes "charts:".
		k := charts.Line - 1
		if k < 0 || k >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[k]), "charts:") {
			return nil, fmt.Errorf("%s: cannot find the empty charts list to append to", file)
		}
		lines[k] = "charts:\n"
	}
	text := entriesText(indent, added)
	at := len(lines)
	if next > 0 {
		at = next - 1
	}
	if at == len(lines) && at > 0 && !strings.HasSuffix(lines[at-1], "\n") {
		lines[at-1] += "\n"
	}
	lines = append(lines[:at], append([]string{text}, lines[at:]...)...)
	return []byte(strings.Join(lines, "")), nil
}

func entriesText(indent string, es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s- repo: %s\n%s  name: %s\n%s  version: %q\n%s  digest: %s\n",
			indent, e.Repo, indent, e.Name, indent, e.Version, indent, e.Digest)
	}
	return b.String()
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; m != nil && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// replaceScalar replaces the single-line scalar n on line with value,
// keeping its quoting.
func replaceScalar(line string, n *yaml.Node, value string) (string, error) {
	start := n.Column - 1
	if start < 0 || start >= len(line) {
		return "", fmt.Errorf("column %d is past the end of the line", n.Column)
	}
	rest := line[start:]
	var end int
	var text string
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		q := rest[0]
		end = strings.IndexByte(rest[1:], q) + 2
		text = string(q) + value + string(q)
	case 0:
		if !strings.HasPrefix(rest, n.Value) {
			return "", fmt.Errorf("cannot edit the value %q in place", n.Value)
		}
		end, text = len(n.Value), value
	default:
		return "", fmt.Errorf("cannot edit the value %q in place (write it as a plain or quoted scalar)", n.Value)
	}
	if end < 2 && n.Style != 0 {
		return "", fmt.Errorf("unterminated quoted value %q", n.Value)
	}
	return line[:start] + text + rest[end:], nil
}
