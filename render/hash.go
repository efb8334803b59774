package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// HashPrefix starts every rendered and object hash.
const HashPrefix = "sha256:"

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of the
// object: keys sorted by UTF-16 code units, no insignificant whitespace,
// ECMAScript number formatting. The object is serialized with the
// encoding/json/v2 prototype (nil slices and maps as null, as encoding/json
// does) and its bytes canonicalized in place by jsontext, without decoding
// them into Go values again. A value v2 refuses (invalid UTF-8, which
// encoding/json replaces with U+FFFD) goes through encoding/json, so the
// bytes are always those of encoding/json + RFC 8785; FuzzCanonical checks
// that against an independent JCS implementation.
func Canonical(o Object) ([]byte, error) {
	if c, ok := canonicalDirect(o.Map); ok {
		return c, nil
	}
	raw, err := jsonv2.Marshal(o.Map, jsonv2.FormatNilSliceAsNull(true), jsonv2.FormatNilMapAsNull(true))
	if err != nil {
		if raw, err = json.Marshal(o.Map); err != nil {
			return nil, fmt.Errorf("serializing %s to JSON: %w", o.ID(), err)
		}
	}
	v := jsontext.Value(raw)
	if err := v.Canonicalize(); err != nil {
		return nil, fmt.Errorf("canonicalizing %s: %w", o.ID(), err)
	}
	return v, nil
}

// ObjectHash is sha256 over the canonical form of one object.
func ObjectHash(o Object) (string, error) {
	c, err := Canonical(o)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return HashPrefix + hex.EncodeToString(sum[:]), nil
}

// Hash is the rendered hash of an object set: sha256 over the objects sorted
// by (group, kind, namespace, name) compared as UTF-8 bytes, each serialized
// with RFC 8785 and followed by "\n". Objects with equal identity (which
// policy refuses) are ordered by their canonical bytes so the hash stays
// deterministic.
func Hash(objs []Object) (string, error) {
	entries := make([]hashEntry, len(objs))
	// Canonicalization is independent per object: spread it over the cores.
	err := parallel(len(objs), func(i int) error {
		c, err := Canonical(objs[i])
		if err != nil {
			return err
		}
		entries[i] = hashEntry{objs[i].ID(), c}
		return nil
	})
	if err != nil {
		return "", err
	}
	return hashEntries(entries), nil
}

// hashEntry is one object of a rendered hash: its identity and canonical
// form.
type hashEntry struct {
	id    ID
	canon []byte
}

// hashEntries is Hash of objects already canonicalized.
func hashEntries(entries []hashEntry) string {
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].id, entries[j].id
		switch {
		case a.Group != b.Group:
			return a.Group < b.Group
		case a.Kind != b.Kind:
			return a.Kind < b.Kind
		case a.Namespace != b.Namespace:
			return a.Namespace < b.Namespace
		case a.Name != b.Name:
			return a.Name < b.Name
		}
		return bytes.Compare(entries[i].canon, entries[j].canon) < 0
	})
	h := sha256.New()
	for _, e := range entries {
		h.Write(e.canon)
		h.Write([]byte{'\n'})
	}
	return HashPrefix + hex.EncodeToString(h.Sum(nil))
}

// parallel runs f(0..n-1) on every core (n/64+1 workers at most) and
// joins the errors.
func parallel(n int, f func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n/64+1)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
