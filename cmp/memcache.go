package cmp

import (
	"sync"

	"github.com/throughline-dev/throughline/render"
)

// memory is the in-memory layer of a Cache with InMemory set: the entries
// this process stored or verified once when it loaded them from disk.
// Nothing outside the process can alter them, so a hit only replays the
// entry's probes against the new checkout (are the inputs the same?) and
// serves the manifests as assembled when the entry was kept: no re-read,
// no integrity or policy re-check.
type memory struct {
	mu    sync.Mutex
	byKey map[string][]*memEntry // most recently used first
	bytes int64
	clock uint64
}

type memEntry struct {
	e *cacheEntry
	// plan is e.Probes compiled once for the replay of every hit.
	plan *render.ReplayPlan
	size int64
	used uint64
}

// probeBytes is what one probe is counted for in the memory bound.
const probeBytes = 128

// find returns the most recently used entry of key whose probes replay on
// fsys, or nil.
func (m *memory) find(key string, fsys *render.ConfinedFS) *cacheEntry {
	m.mu.Lock()
	cands := append([]*memEntry(nil), m.byKey[key]...)
	m.mu.Unlock()
	for _, me := range cands {
		// Replaying reads the checkout: outside the lock, so that
		// concurrent renders of other apps do not wait for it.
		if !me.plan.Replay(fsys) {
			continue
		}
		m.mu.Lock()
		m.clock++
		me.used = m.clock
		m.mu.Unlock()
		return me.e
	}
	return nil
}

// add keeps e (its manifests assembled with its Acceptance once, here)
// under key, then evicts the least recently used entries beyond maxPerApp
// for key and maxBytes overall.
func (m *memory) add(key string, e *cacheEntry, maxPerApp int, maxBytes int64) {
	if e.assembled == nil {
		out, err := assemble(e.Manifests, e.Acceptance)
		if err != nil {
			return // served from disk next time
		}
		e.assembled = out
	}
	me := &memEntry{e: e, plan: render.CompileReplay(e.Probes), size: int64(len(e.Manifests)+len(e.assembled)) + probeBytes*int64(len(e.Probes))}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKey == nil {
		m.byKey = map[string][]*memEntry{}
	}
	m.clock++
	me.used = m.clock
	list := m.byKey[key]
	for i, old := range list {
		if sameProbes(old.e.Probes, e.Probes) {
			m.bytes -= old.size
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	list = append([]*memEntry{me}, list...)
	for _, old := range list[min(len(list), maxPerApp):] {
		m.bytes -= old.size
	}
	m.byKey[key] = list[:min(len(list), maxPerApp)]
	m.bytes += me.size
	for m.bytes > maxBytes {
		if !m.evictOldest() {
			break
		}
	}
}

// evictOldest removes the least recently used entry of all.
func (m *memory) evictOldest() bool {
	var oldKey string
	oldIdx := -1
	var oldUsed uint64
	for k, list := range m.byKey {
		for i, me := range list {
			if oldIdx < 0 || me.used < oldUsed {
				oldKey, oldIdx, oldUsed = k, i, me.used
			}
		}
	}
	if oldIdx < 0 {
		return false
	}
	list := m.byKey[oldKey]
	m.bytes -= list[oldIdx].size
	list = append(list[:oldIdx], list[oldIdx+1:]...)
	if len(list) == 0 {
		delete(m.byKey, oldKey)
	} else {
		m.byKey[oldKey] = list
	}
	return true
}

// stats returns the number of entries and their counted bytes.
func (m *memory) stats() (entries int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, list := range m.byKey {
		entries += len(list)
	}
	return entries, m.bytes
}

func sameProbes(a, b []render.Probe) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
