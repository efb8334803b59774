package cmp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/boundedfile"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// Cache bounds.
const (
	DefaultCacheMaxBytes  = 256 << 20
	DefaultCacheMaxPerApp = 8
)

// Cache is an on-disk render cache shared by concurrent generate processes.
// An entry is valid when replaying its recorded filesystem probes against
// the new checkout gives the same results; entries are written atomically
// (temporary file + rename) and evicted least-recently-used.
//
// Dir must be private: it is created 0700 when missing, and a directory that
// is a symbolic link, is not owned by the current user, or is group- or
// world-writable is neither read nor written (generate renders uncached and
// Result.CacheErr says why).
//
// With InMemory set (the resident renderer: one long-lived process), the
// cache also keeps its entries in memory, bounded by MaxBytes and
// MaxPerApp as on disk: an entry is verified once, when it is loaded from
// disk, and an entry this process stored or verified is served from
// memory without re-reading or re-checking it (nothing outside the
// process can alter it); only its probes are replayed against the new
// checkout.
type Cache struct {
	Dir       string
	MaxBytes  int64
	MaxPerApp int
	InMemory  bool

	dirOnce sync.Once
	dirErr  error
	mem     memory
}

// MemoryStats returns the number of entries and the bytes the in-memory
// layer holds (0, 0 without InMemory).
func (c *Cache) MemoryStats() (entries int, bytes int64) { return c.mem.stats() }

func (c *Cache) maxPerApp() int {
	if c.MaxPerApp <= 0 {
		return DefaultCacheMaxPerApp
	}
	return c.MaxPerApp
}

func (c *Cache) maxBytes() int64 {
	if c.MaxBytes <= 0 {
		return DefaultCacheMaxBytes
	}
	return c.MaxBytes
}

// checkDir creates the cache directory when missing and refuses one that
// someone else could have planted or can write; once per Cache.
func (c *Cache) checkDir() error {
	c.dirOnce.Do(func() { c.dirErr = checkCacheDir(c.Dir) })
	return c.dirErr
}

func checkCacheDir(dir string) error {
	if dir == "" {
		return errors.New("no render cache directory configured (no user cache directory): rendering uncached")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating render cache directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking render cache directory %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("render cache directory %s is a symbolic link: not used, rendering uncached", dir)
	case !fi.IsDir():
		return fmt.Errorf("render cache directory %s is not a directory: not used, rendering uncached", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("render cache directory %s is group- or world-writable (%v): not used, rendering uncached", dir, fi.Mode().Perm())
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("render cache directory %s is owned by uid %d, not by the current user (%d): not used, rendering uncached",
			dir, uid, os.Geteuid())
	}
	return nil
}

// cacheEntry is stored as <inputs>.json (the hex entrySum, a newline, then
// the JSON of renderer, probes and Acceptance) and <inputs>.yaml (the
// manifests), so that checking whether an entry applies does not read the
// manifests.
type cacheEntry struct {
	Renderer   string              `json:"renderer"`
	Probes     []render.Probe      `json:"probes"`
	Manifests  []byte              `json:"-"`
	Acceptance v1alpha1.Acceptance `json:"acceptance"`
	// assembled is Manifests with the Acceptance appended (what generate
	// prints), kept with an in-memory entry.
	assembled []byte
}

func (c *Cache) appDir(key string) string { return filepath.Join(c.Dir, key[:2], key) }

func appKey(version, prefix string, env Env) string {
	h := sha256.New()
	fmt.Fprintf(h, "throughline-cmp-cache/v3\x00%s\x00%s\x00", version, prefix)
	for _, f := range env.fingerprint() {
		fmt.Fprintf(h, "%s\x00", f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// lookup returns an entry of the app whose inputs are unchanged: from
// memory (InMemory) as it is, else from disk, verified (lookupDisk), and
// then kept in memory.
func (c *Cache) lookup(key string, fsys *render.ConfinedFS) (*cacheEntry, error) {
	if c.InMemory {
		if e := c.mem.find(key, fsys); e != nil {
			return e, nil
		}
	}
	e, err := c.lookupDisk(key, fsys)
	if e != nil && c.InMemory {
		c.mem.add(key, e, c.maxPerApp(), c.maxBytes())
	}
	return e, err
}

// lookupDisk returns the first entry for the app whose inputs are unchanged,
// verified: its sum matches the stored bytes, its manifests pass policy and
// its Acceptance declares exactly them. An entry that fails a check is
// removed and reported in the error (a miss: the caller renders afresh and
// logs the error as a warning); it is never returned.
func (c *Cache) lookupDisk(key string, fsys *render.ConfinedFS) (*cacheEntry, error) {
	if c.checkDir() != nil {
		return nil, nil // store reports it
	}
	dir := c.appDir(key)
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	// Newest first: the last commit's inputs are the likeliest.
	sort.Slice(names, func(i, j int) bool { return modTime(names[i]).After(modTime(names[j])) })
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, n.Name())
		// Bounded like every entry (no entry outgrows the cache's own
		// budget) and never through a link: the directory is private,
		// and what is in it is still read as if planted.
		data, err := boundedfile.ReadNoFollow(p, c.maxBytes())
		if err != nil {
			continue
		}
		sum, body, _ := bytes.Cut(data, []byte("\n"))
		var e cacheEntry
		// The encoding/json/v2 decoder: 3x faster on the probe list, and
		// the entry was written by store, so v1's case-insensitive names
		// are not needed. The probes are replayed before the sum is
		// checked: replaying reads only the confined checkout.
		if jsonv2.Unmarshal(body, &e) != nil || len(e.Probes) == 0 {
			continue
		}
		if !render.Replay(fsys, e.Probes) {
			continue
		}
		manifests, err := boundedfile.ReadNoFollow(strings.TrimSuffix(p, ".json")+".yaml", c.maxBytes())
		if err != nil {
			continue // evicted or not yet written: a miss
		}
		e.Manifests = manifests
		name := key[:12] + "/" + strings.TrimSuffix(n.Name(), ".json")[:12]
		if string(sum) != entrySum(body, manifests) {
			c.remove(p)
			return nil, fmt.Errorf("render cache entry %s failed its integrity check (content changed since it was stored); ignored", name)
		}
		if err := e.verify(fsys); err != nil {
			c.remove(p)
			return nil, fmt.Errorf("render cache entry %s ignored: %w", name, err)
		}
		now := time.Now()
		_ = os.Chtimes(p, now, now) // recency for eviction; best effort
		return &e, nil
	}
	return nil, nil
}

// entrySum is the hex sha256 stored beside an entry: over the entry's JSON
// and the manifests, length-prefixed so that no byte moves between them.
func entrySum(body, manifests []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "throughline-cmp-entry/v1\x00%d\x00", len(body))
	h.Write(body)
	h.Write(manifests)
	return hex.EncodeToString(h.Sum(nil))
}

// verify re-runs the object policy on the manifests the entry would serve
// and checks that its Acceptance declares exactly them (rendered hash,
// object count, workloads and exceptions), so that an entry written by
// anyone else than store, with a valid sum, still cannot serve an unpinned
// image or an Acceptance that does not describe the objects.
func (e *cacheEntry) verify(fsys *render.ConfinedFS) error {
	objs, hash, err := render.DecodeJSONStream(e.Manifests, "cached render")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if acceptance.IsAcceptance(o) {
			return fmt.Errorf("the cached objects hold an Acceptance (%s)", o.ID())
		}
	}
	allow, err := acceptance.LoadAllowList(fsys, "")
	if err != nil {
		return err
	}
	res := policy.CheckObjects(objs, allow, e.Acceptance.Spec.Environment)
	if err := res.Err(); err != nil {
		return fmt.Errorf("the cached objects fail policy: %w", err)
	}
	spec := e.Acceptance.Spec
	if hash != spec.RenderedHash || len(objs) != spec.ObjectCount {
		return fmt.Errorf("the cached objects have rendered hash %s (%d objects), the cached Acceptance declares %s (%d)",
			hash, len(objs), spec.RenderedHash, spec.ObjectCount)
	}
	if !sameJSON(acceptance.Workloads(res.Containers), spec.Workloads) || !sameJSON(res.Exceptions, spec.Exceptions) {
		return errors.New("the cached Acceptance's workloads or exceptions are not those of the cached objects")
	}
	return nil
}

// sameJSON reports whether a and b encode alike (an empty list is absent;
// the encoding/json/v2 encoder, 2x faster than v1 on 2,000 workloads, nil
// and empty lists alike).
func sameJSON[T any](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	x, err1 := jsonv2.Marshal(a)
	y, err2 := jsonv2.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// remove deletes an entry (best effort: a concurrent eviction may have
// removed it already).
func (c *Cache) remove(jsonPath string) {
	_ = os.Remove(jsonPath)
	_ = os.Remove(strings.TrimSuffix(jsonPath, ".json") + ".yaml")
}

func modTime(d fs.DirEntry) time.Time {
	fi, err := d.Info()
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// store writes an entry atomically, named by the hash of its inputs, and
// keeps it in memory (InMemory) even when the disk refuses it.
func (c *Cache) store(key string, e *cacheEntry) error {
	if c.InMemory {
		c.mem.add(key, e, c.maxPerApp(), c.maxBytes())
	}
	if err := c.checkDir(); err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding cache entry: %w", err)
	}
	probes, err := json.Marshal(e.Probes)
	if err != nil {
		return fmt.Errorf("encoding cache entry: %w", err)
	}
	sum := sha256.Sum256(probes)
	dir := c.appDir(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating cache directory %s: %w", dir, err)
	}
	base := filepath.Join(dir, hex.EncodeToString(sum[:]))
	// Manifests first: an entry is visible once its .json exists.
	if err := atomicfile.Write(base+".yaml", e.Manifests, 0o600); err != nil {
		return fmt.Errorf("storing render in cache: %w", err)
	}
	stored := append([]byte(entrySum(data, e.Manifests)+"\n"), data...)
	if err := atomicfile.Write(base+".json", stored, 0o600); err != nil {
		return fmt.Errorf("storing render in cache: %w", err)
	}
	return c.evict(dir)
}

// evict keeps at most MaxPerApp entries for the app and MaxBytes overall,
// removing the least recently used first. Concurrent evictions may race;
// a lost entry is only a cache miss.
func (c *Cache) evict(appDir string) error {
	maxPerApp, maxBytes := c.maxPerApp(), c.maxBytes()
	type file struct {
		path string
		size int64
		mod  time.Time
	}
	var all []file
	perApp := map[string][]file{}
	err := filepath.WalkDir(c.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		size := fi.Size()
		if yi, err := os.Stat(strings.TrimSuffix(p, ".json") + ".yaml"); err == nil {
			size += yi.Size()
		}
		f := file{p, size, fi.ModTime()}
		all = append(all, f)
		perApp[filepath.Dir(p)] = append(perApp[filepath.Dir(p)], f)
		return nil
	})
	if err != nil {
		return fmt.Errorf("scanning cache %s: %w", c.Dir, err)
	}
	removed := map[string]bool{}
	byAge := func(fs []file) { sort.Slice(fs, func(i, j int) bool { return fs[i].mod.After(fs[j].mod) }) }
	entries := perApp[appDir]
	byAge(entries)
	remove := func(p string) {
		// Best effort, as the recency above: a concurrent eviction may
		// have removed the entry already, and a failed eviction loses
		// nothing that the render depends on.
		c.remove(p)
		removed[p] = true
	}
	for _, f := range entries[min(len(entries), maxPerApp):] {
		remove(f.path)
	}
	byAge(all)
	var total int64
	for _, f := range all {
		if removed[f.path] {
			continue
		}
		total += f.size
		if total > maxBytes {
			remove(f.path)
		}
	}
	return nil
}
