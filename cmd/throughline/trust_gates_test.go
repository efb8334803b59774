package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// TestGatesRequireRecordedEvidence: with the example's trust policies
// (production requires a signature, provenance, an SBOM and a fresh scan),
// every gate into production refuses a record that carries no evidence
// (exit 3, naming the rule and the image): promote propose; promote verify
// and the PR gates (promote check, check) of an attempt proposed while
// production required nothing. (The refusals of evidence that does not
// verify, against a real registry: promote/trust_test.go, e2e/supplychain.)
func TestGatesRequireRecordedEvidence(t *testing.T) {
	top, root := promoteFixture(t)
	cache := []string{"--trust-cache-dir", t.TempDir()}
	image := "ghcr.io/throughline-dev/checkout@" + promNewDigest
	strict := func() {
		t.Helper()
		example, err := os.ReadFile(filepath.Join(exampleRepo, "throughline-policy.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		// The fixture's notifier key stays listed: staging's evidence is signed.
		writeTree(t, root, map[string]string{"throughline-policy.yaml": listEvidenceSigners(string(example))})
		unsignedApprovals(t, root)
		gittest.Run(t, top, "commit", "-q", "-am", "production requires evidence")
	}
	strict()
	propose := append([]string{"promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production"}, cache...)
	wantRefused(t, "propose", runCLI(t, propose...), image)

	testenv.RemoveTrust(t, root)
	gittest.Run(t, top, "commit", "-q", "-am", "production requires nothing")
	if r := runCLI(t, propose...); r.code != exitcode.OK {
		t.Fatalf("propose without a trust policy: exit %d: %s", r.code, r.stderr)
	}
	strict()
	verify := append([]string{"promote", "verify", "--repo", root, "--app", "checkout", "--to", "production", "--no-trust-cache"}, cache...)
	wantRefused(t, "verify", runCLI(t, verify...), image)

	branch := "throughline/promote/checkout/production/4b7e2a91c3d5-1"
	for _, check := range [][]string{
		{"promote", "check", "--repo", root, "--base", "main", "--head", branch},
		{"check", "--repo", root, "--base", "main", "--head", branch},
	} {
		r := runCLI(t, append(check, cache...)...)
		if r.code != exitcode.Refused || !strings.Contains(r.stdout, "evidence-unrecorded") || !strings.Contains(r.stdout, image) {
			t.Fatalf("%s: exit %d, want 3 listing evidence-unrecorded for %s:\n%s\n%s", check[0], r.code, image, r.stdout, r.stderr)
		}
	}
}

func wantRefused(t *testing.T, gate string, r result, image string) {
	t.Helper()
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, "evidence-unrecorded") || !strings.Contains(r.stderr, image) {
		t.Fatalf("%s: exit %d, want 3 naming evidence-unrecorded and %s: %s", gate, r.code, image, r.stderr)
	}
}
