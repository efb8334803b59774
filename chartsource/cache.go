package chartsource

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/boundedfile"
)

// cache keeps blobs (chart packages) and OCI manifests on disk by their
// sha256 digest. Every read is verified against the digest: a corrupt or
// swapped entry is a miss, never a wrong chart. An empty dir caches nothing.
type cache struct{ dir string }

// digestOf is sha256:<hex> of data.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (c cache) path(kind, digest string) (string, bool) {
	if c.dir == "" || !ValidDigest(digest) {
		return "", false
	}
	return filepath.Join(c.dir, kind, "sha256", strings.TrimPrefix(digest, "sha256:")), true
}

// get returns the entry of kind ("blobs" or "manifests") with digest, read
// up to limit bytes and verified.
func (c cache) get(kind, digest string, limit int64) ([]byte, bool) {
	p, ok := c.path(kind, digest)
	if !ok {
		return nil, false
	}
	data, err := boundedfile.ReadNoFollow(p, limit) // an entry is never a link, a FIFO or larger
	if err != nil || digestOf(data) != digest {
		return nil, false
	}
	return data, true
}

// put stores data, whose digest the caller verified, atomically.
func (c cache) put(kind, digest string, data []byte) error {
	p, ok := c.path(kind, digest)
	if !ok {
		return nil
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	if err := atomicfile.Write(p, data, 0o644); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	return nil
}
