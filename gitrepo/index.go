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
	// histories are FileHistory's answers by start commit and path,
	// historyIDs the commit ids they hold (bounded: maxHistoryIDs).
	histories  map[historyKey][]string
	historyIDs int
	// maxCommits, when set, replaces maxIndexed (tests).
	maxCommits int
	// trees are decoded trees' entries by tree id (treeEntries), holding
	// treeEntries entries in all.
	trees       map[plumbing.Hash]map[string]object.TreeEntry
	treeEntries int
	// walked counts the whole walks from each start commit; linear are
	// the linear histories by start commit (linearFrom; nil: a merge).
	walked map[plumbing.Hash]int
	linear map[plumbing.Hash]*linearHistory
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
	// files are the entries of this commit's tree at the files the diffs
	// of changesOf found changed or added (what a reader of the history
	// reads next: readFile takes them as they are, without walking the
	// trees again).
	files map[string]object.TreeEntry
	tree  plumbing.Hash
	// gen is the generation number (0: not computed yet).
	gen int
}

// maxIndexed bounds the commits the index holds between two operations
// (FileHistory, IsAncestor): at about 0.5 KB a commit with its changed
// paths, some 500 MB. An operation may read past it (a walk needs the
// commits it walks); the next one then starts from an empty index. A
// history longer than the bound is still answered right, by reading it
// again per operation: the bound trades that time for memory.
const maxIndexed = 1 << 20

// bound forgets the whole index when it holds more than maxIndexed
// commits; called only where no operation is under way (the clone's
// lock is held, and a walk keeps the commits it holds).
func (ix *commitIndex) bound() {
	if len(ix.commits) > ix.limit() {
		ix.commits, ix.walked, ix.linear = nil, nil, nil
	}
}

// limit is maxIndexed, or the test's smaller bound.
func (ix *commitIndex) limit() int {
	if ix.maxCommits > 0 {
		return ix.maxCommits
	}
	return maxIndexed
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
	files := map[string]object.TreeEntry{}
	for _, p := range ic.parents {
		ip, err := m.indexOf(p)
		if err != nil {
			return nil, fmt.Errorf("parent %s of %s: %w", p, h, err)
		}
		changed := map[string]bool{}
		if err := m.diffTrees(ip.tree, ic.tree, "", changed, files); err != nil {
			return nil, fmt.Errorf("diffing %s against its parent %s: %w", h, p, err)
		}
		changes = append(changes, changed)
	}
	ic.changed, ic.files = changes, files
	return changes, nil
}

// diffTrees adds to out the paths (under prefix) whose blob differs
// between the trees a and b, descending only into subtrees that differ,
// and to files the entries of b at the paths of files that differ.
func (m *inProcess) diffTrees(a, b plumbing.Hash, prefix string, out map[string]bool, files map[string]object.TreeEntry) error {
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
			if err := m.diffTrees(ea.Hash, eb.Hash, prefix+name+"/", out, files); err != nil {
				return err
			}
		default:
			markChanged(out, prefix+name, ok && isDir(ea) || isDir(eb))
			if !isDir(eb) {
				files[prefix+name] = eb
			}
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

// treeEntries are the entries of tree h by name (none for the zero
// hash), decoded once and remembered by the tree's id (what an object id
// names never changes), within maxTreeEntries entries in all. The map is
// shared: callers only read it.
func (m *inProcess) treeEntries(h plumbing.Hash) (map[string]object.TreeEntry, error) {
	if h.IsZero() {
		return map[string]object.TreeEntry{}, nil
	}
	if out, ok := m.index.trees[h]; ok {
		return out, nil
	}
	t, err := object.GetTree(m.repo.Storer, h)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	out := make(map[string]object.TreeEntry, len(t.Entries))
	for _, e := range t.Entries {
		out[e.Name] = e
	}
	if m.index.trees == nil || m.index.treeEntries+len(out) > maxTreeEntries {
		m.index.trees, m.index.treeEntries = map[plumbing.Hash]map[string]object.TreeEntry{}, 0
	}
	m.index.trees[h] = out
	m.index.treeEntries += len(out) + 1
	return out, nil
}

// maxTreeEntries bounds the tree entries treeEntries remembers (then
// forgets them all at once): some 100 bytes each, about 50 MB.
const maxTreeEntries = 1 << 19

// entryAt is the entry at the slash-separated path p under tree (found
// false when there is none: a name missing, or a file where a directory
// would be), reading each directory through treeEntries.
func (m *inProcess) entryAt(tree plumbing.Hash, p string) (object.TreeEntry, bool, error) {
	names := strings.Split(p, "/")
	h := tree
	for i, name := range names {
		ents, err := m.treeEntries(h)
		if err != nil {
			return object.TreeEntry{}, false, err
		}
		e, ok := ents[name]
		switch {
		case !ok:
			return object.TreeEntry{}, false, nil
		case i == len(names)-1:
			return e, true, nil
		case e.Mode != filemode.Dir:
			return object.TreeEntry{}, false, nil
		}
		h = e.Hash
	}
	return object.TreeEntry{}, false, nil
}

// changedIn reports whether the blob at p differs in a changed set: p
// itself (exact: true), or a directory above it added or removed whole
// (exact: false; then p differs only where one of the two trees has it,
// which touches decides).
func changedIn(changed map[string]bool, p string) (in, exact bool) {
	if changed[p] {
		return true, true
	}
	for i := strings.LastIndex(p, "/"); i > 0; i = strings.LastIndex(p[:i], "/") {
		if changed[p[:i]+"/"] {
			return true, false
		}
	}
	return false, false
}

// touches reports whether p differs between the trees of a commit and of
// its parent, given the commit's changed set against that parent: as git
// compares them, a path under a directory added or removed whole differs
// only when one of the two trees has it.
func (m *inProcess) touches(changed map[string]bool, p string, tree, parent plumbing.Hash) (bool, error) {
	in, exact := changedIn(changed, p)
	if !in || exact {
		return in, nil
	}
	for _, t := range []plumbing.Hash{tree, parent} {
		_, found, err := m.entryAt(t, p)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// fileHistory lists the commits of the history of rev that changed p,
// newest first, as git log -- p does (a commit TREESAME to a parent for p
// follows that parent alone), walking the index.
func (m *inProcess) fileHistory(rev, p string) ([]string, error) {
	w, err := m.walkHistory(rev, p)
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		c, ok, err := w.next(m)
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, c)
	}
}

// historyWalk is a walk of the history of one path from one commit, one
// commit that changed it at a time (next), so that a reader that needs the
// newest few versions (ledger.Reader.EachVersion) walks no further. A walk
// that reaches the end is remembered (histories); a remembered answer is
// replayed.
type historyWalk struct {
	key   historyKey
	done  []string // a remembered answer being replayed (memo true)
	memo  bool
	out   []string
	queue []walkItem
	seen  map[plumbing.Hash]bool
}

type walkItem struct {
	h  plumbing.Hash
	ic *indexed
}

// walkHistory starts a walk of the history of p at rev.
func (m *inProcess) walkHistory(rev, p string) (*historyWalk, error) {
	start, err := m.resolve(rev)
	if err != nil {
		return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
	}
	m.index.bound()
	k := historyKey{start, p}
	if h, ok := m.index.histories[k]; ok {
		return &historyWalk{key: k, done: h, memo: true}, nil
	}
	// A second whole walk from the same commit (the web view reads every
	// record's history at the base): on a history without merges, every
	// path's history is read off one pass (linearFrom).
	if m.index.walked[start] > 0 {
		lh, err := m.linearFrom(start)
		if err != nil {
			return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
		}
		if lh != nil {
			out, err := lh.history(m, p)
			if err != nil {
				return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
			}
			m.remember(k, out)
			return &historyWalk{key: k, done: out, memo: true}, nil
		}
	}
	first, err := m.indexOf(start)
	if err != nil {
		return nil, fmt.Errorf("history of %s at %s: %w", p, rev, err)
	}
	return &historyWalk{key: k, seen: map[plumbing.Hash]bool{start: true}, queue: []walkItem{{start, first}}}, nil
}

// next is the next commit of the walk that changed the path (ok false at
// the end).
func (w *historyWalk) next(m *inProcess) (string, bool, error) {
	if w.memo {
		if len(w.done) == 0 {
			return "", false, nil
		}
		c := w.done[0]
		w.done = w.done[1:]
		return c, true, nil
	}
	p := w.key.path
	for len(w.queue) > 0 {
		// The newest commit first, as git log orders them.
		sort.SliceStable(w.queue, func(i, j int) bool { return w.queue[i].ic.when.After(w.queue[j].ic.when) })
		c := w.queue[0]
		w.queue = w.queue[1:]
		changes, err := m.changesOf(c.h, c.ic)
		if err != nil {
			return "", false, fmt.Errorf("history of %s at %s: %w", p, w.key.start, err)
		}
		follow := c.ic.parents
		changed := true
		for i, parent := range c.ic.parents {
			ip, err := m.indexOf(parent)
			if err != nil {
				return "", false, fmt.Errorf("history of %s at %s: %w", p, w.key.start, err)
			}
			touched, err := m.touches(changes[i], p, c.ic.tree, ip.tree)
			if err != nil {
				return "", false, fmt.Errorf("history of %s at %s: %w", p, c.h, err)
			}
			if !touched { // TREESAME to this parent: follow it alone
				follow, changed = []plumbing.Hash{parent}, false
				break
			}
		}
		if changed && len(c.ic.parents) == 0 {
			present, err := m.hasPath(c.ic.tree, p)
			if err != nil {
				return "", false, fmt.Errorf("history of %s at %s: %w", p, c.h, err)
			}
			changed = present
		}
		for _, parent := range follow {
			if w.seen[parent] {
				continue
			}
			w.seen[parent] = true
			ip, err := m.indexOf(parent)
			if err != nil {
				return "", false, fmt.Errorf("history of %s at %s: %w", p, w.key.start, err)
			}
			w.queue = append(w.queue, walkItem{parent, ip})
		}
		if changed {
			w.out = append(w.out, c.h.String())
			return c.h.String(), true, nil
		}
	}
	// The whole history: remembered for the next walk from this commit.
	w.memo, w.done = true, nil
	m.remember(w.key, w.out)
	if m.index.walked == nil {
		m.index.walked = map[plumbing.Hash]int{}
	}
	m.index.walked[w.key.start]++
	return "", false, nil
}

// linearHistory is the history from one commit when it has no merge:
// its commits newest first, down to the root, and for every path a
// commit changes against its parent (a key of indexed.changed), the
// positions of those commits, ascending.
type linearHistory struct {
	commits []plumbing.Hash
	byPath  map[string][]int
}

// maxLinear bounds the linear histories remembered (then forgotten all
// at once); each holds a commit id and a few positions per commit.
const maxLinear = 8

// linearFrom is the linear history from start, read in one pass of its
// first parents (remembered); nil when start's history has a merge (then
// the walk of historyWalk decides, which follows git's simplification).
func (m *inProcess) linearFrom(start plumbing.Hash) (*linearHistory, error) {
	ix := &m.index
	if lh, ok := ix.linear[start]; ok {
		return lh, nil
	}
	lh := &linearHistory{byPath: map[string][]int{}}
	for h := start; ; {
		ic, err := m.indexOf(h)
		if err != nil {
			return nil, err
		}
		if len(ic.parents) > 1 {
			lh = nil // a merge: not linear
			break
		}
		lh.commits = append(lh.commits, h)
		if len(ic.parents) == 0 {
			break
		}
		changes, err := m.changesOf(h, ic)
		if err != nil {
			return nil, err
		}
		for k := range changes[0] {
			lh.byPath[k] = append(lh.byPath[k], len(lh.commits)-1)
		}
		h = ic.parents[0]
	}
	if ix.linear == nil || len(ix.linear) >= maxLinear {
		ix.linear = map[plumbing.Hash]*linearHistory{}
	}
	ix.linear[start] = lh
	return lh, nil
}

// history is what the walk answers for p on a linear history: each commit
// whose change against its parent touches p (p itself, or a directory
// above it added or removed whole where one of the trees has p), and the
// root commit when its tree has p, newest first.
func (lh *linearHistory) history(m *inProcess, p string) ([]string, error) {
	pos := slices.Clone(lh.byPath[p])
	for i := strings.LastIndex(p, "/"); i > 0; i = strings.LastIndex(p[:i], "/") {
		// A directory above p added or removed whole: p changed where one
		// of the two trees has it (touches).
		for _, n := range lh.byPath[p[:i]+"/"] {
			ic, err := m.indexOf(lh.commits[n])
			if err != nil {
				return nil, err
			}
			ip, err := m.indexOf(lh.commits[n+1]) // its parent: the root has no changes
			if err != nil {
				return nil, err
			}
			touched, err := m.touches(map[string]bool{p[:i] + "/": true}, p, ic.tree, ip.tree)
			if err != nil {
				return nil, err
			}
			if touched {
				pos = append(pos, n)
			}
		}
	}
	root := lh.commits[len(lh.commits)-1]
	ic, err := m.indexOf(root)
	if err != nil {
		return nil, err
	}
	present, err := m.hasPath(ic.tree, p)
	if err != nil {
		return nil, fmt.Errorf("history of %s at %s: %w", p, root, err)
	}
	if present {
		pos = append(pos, len(lh.commits)-1)
	}
	slices.Sort(pos)
	pos = slices.Compact(pos)
	out := make([]string, len(pos))
	for i, n := range pos {
		out[i] = lh.commits[n].String()
	}
	return out, nil
}

// remember keeps a whole answer of FileHistory, within maxHistoryIDs
// commit ids in all (then everything is forgotten at once).
func (m *inProcess) remember(k historyKey, out []string) {
	if m.index.histories == nil || m.index.historyIDs+len(out) > maxHistoryIDs {
		m.index.histories, m.index.historyIDs = map[historyKey][]string{}, 0
	}
	m.index.histories[k] = slices.Clone(out)
	m.index.historyIDs += len(out) + 1
}

// maxHistoryIDs bounds the commit ids FileHistory's remembered answers
// hold in all (an answer counts its ids and one): about 40 MB of ids.
const maxHistoryIDs = 1 << 20

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
