package gitrepo

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// commitIndex is what an in-process clone remembers of its history, by
// commit id (what a commit id names never changes): each commit's parents,
// committer time and the paths it changes against each parent. Each
// commit is read and diffed once; FileHistory and IsAncestor then walk the
// index, not the objects, so that reading the history of every record of
// a repository with thousands of commits reads that history once (issue
// 37: the web view's report went from minutes to seconds). It grows with
// the history read; it is used under the clone's lock.
type commitIndex struct {
	commits map[plumbing.Hash]*indexed
	// histories are FileHistory's answers by start commit and path.
	histories map[historyKey][]string
}

type historyKey struct {
	start plumbing.Hash
	path  string
}

// indexed is one commit of the index.
type indexed struct {
	parents []plumbing.Hash
	when    time.Time
	// changed are, per parent, the paths whose blob differs (a directory
	// added or removed whole is its path and a slash); nil until
	// changesOf diffs them.
	changed []map[string]bool
	tree    plumbing.Hash
	// gen is the generation number (0: not computed yet).
	gen int
}

// indexOf reads commit h into the index (once) and returns it.
func (m *inProcess) indexOf(h plumbing.Hash) (*indexed, error) {
	if m.index.commits == nil {
		m.index.commits = map[plumbing.Hash]*indexed{}
	}
	if ic, ok := m.index.commits[h]; ok {
		return ic, nil
	}
	c, err := m.repo.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	ic := &indexed{parents: c.ParentHashes, when: c.Committer.When, tree: c.TreeHash}
	m.index.commits[h] = ic
	return ic, nil
}

// changesOf are the paths ic (commit h) changes against each parent,
// diffed once.
func (m *inProcess) changesOf(h plumbing.Hash, ic *indexed) ([]map[string]bool, error) {
	if ic.changed != nil || len(ic.parents) == 0 {
		return ic.changed, nil
	}
	changes := make([]map[string]bool, 0, len(ic.parents))
	for _, p := range ic.parents {
		ip, err := m.indexOf(p)
		if err != nil {
			return nil, fmt.Errorf("parent %s of %s: %w", p, h, err)
		}
		changed := map[string]bool{}
		if err := m.diffTrees(ip.tree, ic.tree, "", changed); err != nil {
			return nil, fmt.Errorf("diffing %s against its parent %s: %w", h, p, err)
		}
		changes = append(changes, changed)
	}
	ic.changed = changes
	return changes, nil
}

// diffTrees adds to out the paths (under prefix) whose blob differs
// between the trees a and b, descending only into subtrees that differ.
func (m *inProcess) diffTrees(a, b plumbing.Hash, prefix string, out map[string]bool) error {
	if a == b {
		return nil
	}
	ta, err := m.treeEntries(a)
	if err != nil {
		return err
	}
	tb, err := m.treeEntries(b)
	if err != nil {
		return err
	}
	for name, eb := range tb {
		ea, ok := ta[name]
		switch {
		case ok && ea.Hash == eb.Hash:
		case ok && isDir(ea) && isDir(eb):
			if err := m.diffTrees(ea.Hash, eb.Hash, prefix+name+"/", out); err != nil {
				return err
			}
		default:
			markChanged(out, prefix+name, ok && isDir(ea) || isDir(eb))
		}
	}
	for name, ea := range ta {
		if _, ok := tb[name]; !ok {
			markChanged(out, prefix+name, isDir(ea))
		}
	}
	return nil
}

func isDir(e object.TreeEntry) bool { return e.Mode == filemode.Dir }

// markChanged marks p changed, and everything under it when a directory
// was involved (added, removed or replaced by a file).
func markChanged(out map[string]bool, p string, dir bool) {
	out[p] = true
	if dir {
		out[p+"/"] = true
	}
}

// treeEntries are the entries of tree h by name (none for the zero hash).
func (m *inProcess) treeEntries(h plumbing.Hash) (map[string]object.TreeEntry, error) {
	out := map[string]object.TreeEntry{}
	if h.IsZero() {
		return out, nil
	}
	t, err := object.GetTree(m.repo.Storer, h)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		out[e.Name] = e
	}
	return out, nil
}

// changedIn reports whether the blob at p differs in a changed set: p
// itself, or a directory above it added or removed whole.
func changedIn(changed map[string]bool, p string) bool {
	if changed[p] {
		return true
	}
	for i := strings.LastIndex(p, "/"); i > 0; i = strings.LastIndex(p[:i], "/") {
		if changed[p[:i]+"/"] {
			return true
		}
	}
	return false
}

// fileHistory lists the commits of the history of rev that changed p,
// newest first, as git log -- p does (a commit TREESAME to a parent for p
// follows that parent alone), walking the index.
func (m *inProcess) fileHistory(rev, p string) ([]string, error) {
	start, err := m.resolve(rev)
	if err != nil {
		return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
	}
	if h, ok := m.index.histories[historyKey{start, p}]; ok {
		return slices.Clone(h), nil
	}
	first, err := m.indexOf(start)
	if err != nil {
		return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
	}
	type item struct {
		h  plumbing.Hash
		ic *indexed
	}
	var out []string
	seen := map[plumbing.Hash]bool{start: true}
	queue := []item{{start, first}}
	for len(queue) > 0 {
		// The newest commit first, as git log orders them.
		sort.SliceStable(queue, func(i, j int) bool { return queue[i].ic.when.After(queue[j].ic.when) })
		c := queue[0]
		queue = queue[1:]
		changes, err := m.changesOf(c.h, c.ic)
		if err != nil {
			return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
		}
		follow := c.ic.parents
		changed := true
		for i, parent := range c.ic.parents {
			if !changedIn(changes[i], p) { // TREESAME to this parent: follow it alone
				follow, changed = []plumbing.Hash{parent}, false
				break
			}
		}
		if changed && len(c.ic.parents) == 0 {
			present, err := m.hasPath(c.ic.tree, p)
			if err != nil {
				return nil, fmt.Errorf("history of %s at %s: %w", p, c.h, err)
			}
			changed = present
		}
		if changed {
			out = append(out, c.h.String())
		}
		for _, parent := range follow {
			if seen[parent] {
				continue
			}
			seen[parent] = true
			ip, err := m.indexOf(parent)
			if err != nil {
				return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
			}
			queue = append(queue, item{parent, ip})
		}
	}
	if m.index.histories == nil || len(m.index.histories) >= maxHistories {
		m.index.histories = map[historyKey][]string{}
	}
	m.index.histories[historyKey{start, p}] = slices.Clone(out)
	return out, nil
}

// maxHistories bounds the answers FileHistory remembers (then forgotten
// all at once).
const maxHistories = 20000

// hasPath reports whether tree holds a blob or link at p.
func (m *inProcess) hasPath(tree plumbing.Hash, p string) (bool, error) {
	t, err := object.GetTree(m.repo.Storer, tree)
	if err != nil {
		return false, err
	}
	_, err = t.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return false, nil
	}
	return err == nil, err
}

// isAncestorIndexed reports whether a is b or in its history: a walk of
// the index from b that leaves out every commit of a lower generation
// than a's (none of them can reach a), so that asking about a recent
// commit costs the few commits between them, not the whole history.
func (m *inProcess) isAncestorIndexed(a, b plumbing.Hash) (bool, error) {
	ga, err := m.generation(a)
	if err != nil {
		return false, err
	}
	seen := map[plumbing.Hash]bool{b: true}
	stack := []plumbing.Hash{b}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if h == a {
			return true, nil
		}
		gen, err := m.generation(h)
		if err != nil {
			return false, err
		}
		if gen <= ga { // a's generation or lower: its parents are lower still
			continue
		}
		ic, err := m.indexOf(h)
		if err != nil {
			return false, err
		}
		for _, p := range ic.parents {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false, nil
}

// generation is h's generation number (1 for a root commit, else one more
// than its parents' highest), computed once per commit without recursion.
func (m *inProcess) generation(h plumbing.Hash) (int, error) {
	stack := []plumbing.Hash{h}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		ic, err := m.indexOf(top)
		if err != nil {
			return 0, err
		}
		if ic.gen > 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		gen, ready := 1, true
		for _, p := range ic.parents {
			ip, err := m.indexOf(p)
			if err != nil {
				return 0, err
			}
			if ip.gen == 0 {
				ready = false
				stack = append(stack, p)
				continue
			}
			gen = max(gen, ip.gen+1)
		}
		if ready {
			ic.gen = gen
			stack = stack[:len(stack)-1]
		}
	}
	ic, err := m.indexOf(h)
	if err != nil {
		return 0, err
	}
	return ic.gen, nil
}
