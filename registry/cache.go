package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/boundedfile"
)

// maxManifestSize caps a manifest read from the registry or the cache.
const maxManifestSize = 4 << 20

// cache holds manifests by digest: in memory for one Client, on disk (when
// dir is set) forever, since a digest names its content. Entries are verified
// against their digest when read; a corrupt entry is a miss.
type cache struct {
	dir string
	mu  sync.Mutex
	mem map[string]cachedManifest
}

type cachedManifest struct {
	MediaType string `json:"mediaType"`
	Manifest  []byte `json:"manifest"`
}

func newCache(dir string) *cache {
	return &cache{dir: dir, mem: map[string]cachedManifest{}}
}

func (c *cache) path(digest string) (string, bool) {
	alg, hexPart, ok := strings.Cut(digest, ":")
	if !ok || alg != "sha256" || len(hexPart) != 64 || strings.Trim(hexPart, "0123456789abcdef") != "" {
		return "", false
	}
	return filepath.Join(c.dir, "manifests", alg, hexPart+".json"), true
}

func verify(digest string, data []byte) bool {
	sum := sha256.Sum256(data)
	return digest == "sha256:"+hex.EncodeToString(sum[:])
}

func (c *cache) get(digest string) (cachedManifest, bool) {
	c.mu.Lock()
	m, ok := c.mem[digest]
	c.mu.Unlock()
	if ok || c.dir == "" {
		return m, ok
	}
	p, ok := c.path(digest)
	if !ok {
		return m, false
	}
	data, err := boundedfile.ReadNoFollow(p, 2*maxManifestSize) // an entry is never a link, a FIFO or larger
	if err != nil || json.Unmarshal(data, &m) != nil || !verify(digest, m.Manifest) {
		return cachedManifest{}, false
	}
	c.mu.Lock()
	c.mem[digest] = m
	c.mu.Unlock()
	return m, true
}

// put stores a manifest whose digest the caller verified.
func (c *cache) put(digest string, m cachedManifest) error {
	c.mu.Lock()
	c.mem[digest] = m
	c.mu.Unlock()
	if c.dir == "" {
		return nil
	}
	p, ok := c.path(digest)
	if !ok {
		return nil // only sha256 is cached on disk
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("registry cache: %w", err)
	}
	return atomicfile.Write(p, data, 0o644)
}
