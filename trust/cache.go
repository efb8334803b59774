package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// cache is the on-disk verification cache: one file per (image digest,
// bundle digest, policy signer hash) holding the verified statement and
// the signers that verified it. Only successful verifications are stored;
// an empty dir is no cache.
type cache struct{ dir string }

func (c cache) path(image, bundle v1.Hash, policy string) string {
	return filepath.Join(c.dir, image.Algorithm+"-"+image.Hex, bundle.Algorithm+"-"+bundle.Hex, policy+".json")
}

// get is the cached verification (nil: none, or unreadable: verify again).
func (c cache) get(image, bundle v1.Hash, policy string) *verified {
	if c.dir == "" {
		return nil
	}
	data, err := os.ReadFile(c.path(image, bundle, policy))
	if err != nil {
		return nil
	}
	var v verified
	if json.Unmarshal(data, &v) != nil || len(v.Statement) == 0 || len(v.Signers) == 0 {
		return nil
	}
	return &v
}

// put stores v (atomically: a temporary file renamed into place).
func (c cache) put(image, bundle v1.Hash, policy string, v *verified) error {
	if c.dir == "" {
		return nil
	}
	p := c.path(image, bundle, policy)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("creating the verification cache: %w", err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the verification of %s: %w", bundle, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing the verification cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing the verification cache %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil && !errors.Is(err, fs.ErrExist) {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing the verification cache %s: %w", p, err)
	}
	return nil
}
