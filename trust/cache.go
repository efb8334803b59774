package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/throughline-dev/throughline/boundedfile"
	"github.com/throughline-dev/throughline/privatedir"
)

// cache is the on-disk bundle cache (Options.CacheDir): the bytes of each
// bundle that verified once, content-addressed by their digest
// (bundles/sha256/<hex>). It saves registry requests, never a
// verification: a hit is only bytes whose sha256 is the requested digest,
// and the caller verifies them against its policy as if it had fetched
// them. A file that is missing, not a regular file, too large or hashes to
// anything else is a miss. The zero cache (no directory) holds nothing.
type cache struct{ dir string }

// openCache is the cache in dir ("" : none), created when missing
// (privatedir.Ensure: 0700); a directory that is a symbolic link, not a
// directory, writable by group or others or owned by another user is
// refused (an error wrapping privatedir's reason).
func openCache(dir string) (cache, error) {
	if dir == "" {
		return cache{}, nil
	}
	if err := privatedir.Ensure(dir); err != nil {
		return cache{}, fmt.Errorf("trust verification cache: %w", err)
	}
	return cache{dir: dir}, nil
}

// path is where the bundle of digest d is kept ("": d is not sha256).
func (c cache) path(d v1.Hash) string {
	if c.dir == "" || d.Algorithm != "sha256" || len(d.Hex) != sha256.Size*2 {
		return ""
	}
	return filepath.Join(c.dir, "bundles", d.Algorithm, d.Hex)
}

// get returns the bytes of bundle d, or nil (a miss).
func (c cache) get(d v1.Hash) []byte {
	p := c.path(d)
	if p == "" {
		return nil
	}
	data, err := boundedfile.ReadNoFollow(p, maxBundleSize) // an entry is never a link, a FIFO or larger
	if err != nil {
		return nil
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != d.Hex {
		return nil
	}
	return data
}

// put keeps data as bundle d (a temporary file renamed into place; the
// caller checked that data hashes to d). Not synced: an entry a crash
// truncated hashes to something else, a miss.
func (c cache) put(d v1.Hash, data []byte) error {
	p := c.path(d)
	if p == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("creating the trust verification cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("caching bundle %s: %w", d, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("caching bundle %s in %s: %w", d, p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("caching bundle %s in %s: %w", d, p, err)
	}
	return nil
}
