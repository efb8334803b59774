package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion/policyfile"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

const trustPolicy = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  staging:
    paths: ["apps/*/overlays/staging"]
    trust:
      signatures: [{publicKey: keys/ci.pub}]
      attestations:
        provenance: {builders: ["` + trusttest.BuilderID + `"], sourceRepositories: ["` + trusttest.SourceRepo + `"]}
        sbom: {}
        vulnerabilityScan: {maxSeverity: medium, maxAge: 168h}
  production:
    paths: ["apps/*/overlays/production"]
    trust:
      signatures: [{publicKey: keys/ci.pub}]
      attestations:
        provenance: {builders: ["` + trusttest.BuilderID + `"], sourceRepositories: ["` + trusttest.SourceRepo + `"]}
        vulnerabilityScan: {maxSeverity: medium, maxAge: 24h}
`

// TestTrustVerify: an image whose scan is two days old is verified for
// staging (its evidence printed as JSON) and refused for production, by
// discovery and by the digests staging printed; an unknown environment, a
// tag and a missing --environment are refused before any registry request.
func TestTrustVerify(t *testing.T) {
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	e.Scan = w.SignKey(w.Key, trusttest.Scan(img, time.Now().Add(-48*time.Hour), nil))
	w.Attach(img, e.All()...)
	top := breakglassRepo(t, map[string]string{"throughline-policy.yaml": trustPolicy,
		"keys/ci.pub": string(w.Files["keys/ci.pub"])})
	base := []string{"trust", "verify", "--repo", top, "--cache-dir", t.TempDir()}

	r := runCLI(t, append(base, "--environment", "staging", "--source-commit", trusttest.SourceCommit, img.String())...)
	if r.code != exitcode.OK {
		t.Fatalf("staging: exit %d: %s", r.code, r.stderr)
	}
	var ev trust.Evidence
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || len(ev.Items) != 4 || ev.SourceCommit != trusttest.SourceCommit {
		t.Fatalf("staging evidence %v: %s", err, r.stdout)
	}
	recorded := []string{}
	for _, d := range ev.Digests() {
		recorded = append(recorded, "--evidence", d)
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"production: scan too old":       {[]string{"--environment", "production", img.String()}, exitcode.Refused, "evidence " + trusttest.DigestOf(e.Scan) + ": scan-too-old"},
		"production: recorded, too old":  {append([]string{"--environment", "production", img.String()}, recorded...), exitcode.Refused, "scan-too-old: the scan finished"},
		"staging: another source commit": {[]string{"--environment", "staging", "--source-commit", strings.Repeat("f", 40), img.String()}, exitcode.Refused, "provenance-source: "},
		"unknown environment":            {[]string{"--environment", "qa", img.String()}, exitcode.Refused, "qa"},
		"tag":                            {[]string{"--environment", "staging", w.Host + "/checkout:latest"}, exitcode.Invalid, "digest"},
		"no environment":                 {[]string{img.String()}, exitcode.Usage, "--environment"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, append(base, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d naming %q: %s", r.code, tc.code, tc.want, r.stderr)
			}
		})
	}
}

// TestTrustVerifyPlantedCache: cache entries for evidence that exists
// nowhere (a verification record per requirement, at the keys the public
// policy determines, and bytes that do not hash to their names) do not
// make trust verify --evidence pass: each bundle is fetched, and refused
// as missing.
func TestTrustVerifyPlantedCache(t *testing.T) {
	w := trusttest.New(t, true)
	img := w.Image("app") // nothing attached
	top := breakglassRepo(t, map[string]string{"throughline-policy.yaml": trustPolicy,
		"keys/ci.pub": string(w.Files["keys/ci.pub"])})
	pol, err := policyfile.Parse(policyfile.File, []byte(trustPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := trust.Compile(context.Background(), "staging", pol.Environments["staging"].Trust, w.Read)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	args := []string{"trust", "verify", "--repo", top, "--cache-dir", cache, "--environment", "staging"}
	for i, stmt := range [][]byte{trusttest.Signature(img),
		trusttest.Provenance(img, trusttest.BuilderID, trusttest.SourceRepo, trusttest.SourceCommit),
		trusttest.SBOM(img, trusttest.PredicateCycloneDX), trusttest.Scan(img, time.Now(), nil)} {
		d := trusttest.DigestOf([]byte(fmt.Sprintf("bundle %d that exists nowhere", i)))
		record, err := json.Marshal(map[string]any{"statement": stmt, "signers": []int{0}})
		if err != nil {
			t.Fatal(err)
		}
		hex := strings.TrimPrefix(d, "sha256:")
		for _, p := range []string{
			filepath.Join(cache, "sha256-"+trusttest.Hex(img), "sha256-"+hex, tp.Hash()+".json"),
			filepath.Join(cache, "bundles", "sha256", hex),
		} {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, record, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args, "--evidence", d)
	}
	r := runCLI(t, append(args, img.String())...)
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, "evidence-missing") {
		t.Fatalf("exit %d, want %d (evidence-missing): %s%s", r.code, exitcode.Refused, r.stdout, r.stderr)
	}
}

// TestTrustCacheDirDefault: the default cache directory is under
// THROUGHLINE_CACHE_DIR, else the user's cache directory, else none:
// never a fixed path in the shared temporary directory.
func TestTrustCacheDirDefault(t *testing.T) {
	t.Setenv(EnvCacheDir, "/srv/cache")
	if d := defaultTrustCacheDir(); d != filepath.Join("/srv/cache", "trust") {
		t.Errorf("with %s: %q", EnvCacheDir, d)
	}
	t.Setenv(EnvCacheDir, "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if d := defaultTrustCacheDir(); d != "" {
		t.Errorf("without any cache directory: %q, want none", d)
	}
}
