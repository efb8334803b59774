package trust

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/privatedir"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// cachedBundle is where the cache keeps the bundle of digest d (sha256:<hex>).
func cachedBundle(dir, d string) string {
	return filepath.Join(dir, "bundles", "sha256", strings.TrimPrefix(d, "sha256:"))
}

// plant writes data at path, as someone with write access to the cache
// directory would.
func plant(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCachePlantedEntries: whatever sits in the cache directory, a gate
// judges only bundles whose bytes hash to the recorded digest and verify
// against the policy; a planted entry is a miss (then fetched, and
// refused as the registry's answer would be) or a bundle that fails
// verification.
func TestCachePlantedEntries(t *testing.T) {
	t.Parallel()
	nowhere := trusttest.DigestOf([]byte("a bundle that exists nowhere"))
	tests := []struct {
		name  string
		plant func(t *testing.T, w *trusttest.World, pol *Policy, img name.Digest, e *trusttest.Evidence, dir string) string // the recorded digest
		rule  string
	}{
		{"a verification record for a bundle that exists nowhere", func(t *testing.T, w *trusttest.World, pol *Policy, img name.Digest, _ *trusttest.Evidence, dir string) string {
			// What the cache once stored (key computable from the public
			// policy): the statement and the signers that verified it.
			record, err := json.Marshal(map[string]any{"statement": trusttest.Signature(img), "signers": []int{0}})
			if err != nil {
				t.Fatal(err)
			}
			h := strings.TrimPrefix(nowhere, "sha256:")
			plant(t, filepath.Join(dir, "sha256-"+trusttest.Hex(img), "sha256-"+h, pol.Hash()+".json"), record)
			plant(t, cachedBundle(dir, nowhere), record)
			return nowhere
		}, RuleEvidenceMissing},
		{"another bundle's bytes under the recorded digest", func(t *testing.T, _ *trusttest.World, _ *Policy, _ name.Digest, e *trusttest.Evidence, dir string) string {
			plant(t, cachedBundle(dir, nowhere), e.Sig) // a valid signature of the image, under a digest it does not have
			return nowhere
		}, RuleEvidenceMissing},
		{"a bundle signed by another key, under its own digest", func(t *testing.T, w *trusttest.World, _ *Policy, img name.Digest, _ *trusttest.Evidence, dir string) string {
			forged := w.SignKey(w.OtherKey, trusttest.Signature(img))
			plant(t, cachedBundle(dir, trusttest.DigestOf(forged)), forged)
			return trusttest.DigestOf(forged)
		}, RuleSignatureInvalid},
		{"another image's signature with this image's statement, under its own digest", func(t *testing.T, w *trusttest.World, _ *Policy, img name.Digest, _ *trusttest.Evidence, dir string) string {
			other := w.Image("other")
			forged := tamper(t, w.SignKey(w.Key, trusttest.Signature(other)), trusttest.Signature(img))
			plant(t, cachedBundle(dir, trusttest.DigestOf(forged)), forged)
			return trusttest.DigestOf(forged)
		}, RuleSignatureInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := trusttest.New(t, true)
			img := w.Image("checkout")
			e := w.CIEvidence(img)
			w.Attach(img, e.All()...)
			tp := trusttest.KeyPolicy(productionAge)
			tp.Attestations = nil // a signature is all it takes
			pol := policyOf(w, "production", tp)
			dir := t.TempDir()
			recorded := tt.plant(t, w, pol, img, e, dir)
			_, err := VerifyRecorded(context.Background(), pol, img.String(), []string{recorded}, Options{CacheDir: dir, Now: w.Now})
			wantRefusal(t, err, tt.rule, img, nil)
		})
	}
}

// editScan rewrites every cached scan under dir as an attacker with write
// access would: its statement now says the scan finished at finished (the
// signature kept). It returns the number of entries edited.
func editScan(t *testing.T, dir string, img name.Digest, finished time.Time) int {
	t.Helper()
	fresh := trusttest.Scan(img, finished, nil)
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var record struct {
			Statement []byte `json:"statement"`
			Signers   []int  `json:"signers"`
		}
		switch {
		case json.Unmarshal(data, &record) == nil && bytes.Contains(record.Statement, []byte(trusttest.PredicateVulns)):
			record.Statement = fresh // a verification record
			data, err = json.Marshal(record)
			if err != nil {
				return err
			}
		case claimedType(data) == trusttest.PredicateVulns: // a bundle
			data = tamper(t, data, fresh)
		default:
			return nil
		}
		n++
		return os.WriteFile(p, data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCacheEditedEntryIsAMiss: staging accepted an image with a two-day
// old scan and cached its evidence; someone then edits the cached scan to
// look fresh. Production's gate does not believe the cache: the edited
// entry is a miss, the recorded scan is fetched again and refused as too
// old, and the cache holds the registry's bytes again.
func TestCacheEditedEntryIsAMiss(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-48*time.Hour), nil))
	w.Attach(img, e.All()...)
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{CacheDir: dir, Now: w.Now}
	ev, err := Verify(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(), opts)
	if err != nil {
		t.Fatalf("staging: %v", err)
	}
	if n := editScan(t, dir, img, w.Now); n == 0 {
		t.Fatal("no cached scan to edit")
	}
	before := w.Requests.Load()
	_, err = VerifyRecorded(ctx, policyOf(w, "production", trusttest.KeyPolicy(productionAge)), img.String(), ev.Digests(), opts)
	wantRefusal(t, err, RuleScanTooOld, img, e.Scan)
	if w.Requests.Load() == before {
		t.Error("the edited entry was not fetched again")
	}
	if data, err := os.ReadFile(cachedBundle(dir, trusttest.DigestOf(e.Scan))); err != nil || !bytes.Equal(data, e.Scan) {
		t.Errorf("the cache does not hold the registry's scan again: %v", err)
	}
}

// TestCacheDirectoryRules: a cache directory someone else could have
// planted or can write is not used: the verification fails (exit 1)
// naming the directory and why, before any registry request; a missing
// one is created private.
func TestCacheDirectoryRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) // dir does not exist yet
		want  error
	}{
		{"missing: created", func(*testing.T, string) {}, nil},
		{"symbolic link to a private directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir+".real", 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(dir+".real", dir); err != nil {
				t.Fatal(err)
			}
		}, privatedir.ErrSymlink},
		{"group-writable", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o770); err != nil {
				t.Fatal(err)
			}
		}, privatedir.ErrWritable},
		{"owned by another user", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, privatedir.ErrOwner},
		{"a file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, privatedir.ErrNotDir},
	}
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	pol := policyOf(w, "production", trusttest.KeyPolicy(productionAge))
	recorded := []string{trusttest.DigestOf(e.Sig), trusttest.DigestOf(e.Prov), trusttest.DigestOf(e.SBOM), trusttest.DigestOf(e.Scan)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "trust")
			tt.setup(t, dir)
			before := w.Requests.Load()
			_, err := VerifyRecorded(context.Background(), pol, img.String(), recorded, Options{CacheDir: dir, Now: w.Now})
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				fi, err := os.Lstat(dir)
				if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Fatalf("cache directory %v: %v", fi.Mode(), err)
				}
				return
			}
			if !errors.Is(err, tt.want) || exitcode.Code(err) != exitcode.Internal || !strings.Contains(err.Error(), dir) {
				t.Fatalf("exit %d: %v, want %v naming %s", exitcode.Code(err), err, tt.want, dir)
			}
			if n := w.Requests.Load() - before; n != 0 {
				t.Errorf("%d registry requests before refusing the directory", n)
			}
		})
	}
}
