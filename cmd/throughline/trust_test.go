package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
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
