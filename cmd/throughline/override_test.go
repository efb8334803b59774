package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

// TestPromoteFreezeOverride: alice and bob approve production (two signed
// approvals), then main freezes production: promote check refuses the
// attempt; promote approve --override-freeze refuses a missing reason, an
// expiry beyond a day and an unlisted key; alice's override alone is one of
// two; with bob's the check passes, naming who overrode, why and until
// when, and promote status lists both overrides.
func TestPromoteFreezeOverride(t *testing.T) {
	top, root := promoteFixture(t)
	alice, bob, eve := sshkey.New(t, "alice@example.com"), sshkey.New(t, "bob@example.com"), sshkey.New(t, "eve@example.com")
	example, err := os.ReadFile(filepath.Join(exampleRepo, "throughline-policy.yaml"))
	if err == nil {
		example, err = testenv.WithoutTrust(example) // made-up digests, no evidence
	}
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"throughline-policy.yaml": listEvidenceSigners(string(example)), "allowed-signers": sshkey.Signers(alice, bob)})
	gittest.Run(t, top, "commit", "-q", "-am", "approvers")
	repo := []string{"--repo", root, "--app", "checkout", "--to", "production"}
	for _, args := range [][]string{
		{"promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production"},
		append([]string{"promote", "verify"}, repo...),
	} {
		if r := runCLI(t, args...); r.code != 0 {
			t.Fatalf("%s: %d %s %s", args[1], r.code, r.stdout, r.stderr)
		}
	}
	approve := append([]string{"promote", "approve", "--expires", "2h"}, repo...)
	for _, k := range []sshkey.Key{alice, bob} {
		signAs(t, top, k)
		if r := runCLI(t, approve...); r.code != 0 {
			t.Fatalf("approve as %s: %d %s %s", k.Principal, r.code, r.stdout, r.stderr)
		}
	}
	// main freezes production.
	gittest.Run(t, top, "checkout", "-q", "main")
	from, until := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339)
	pol := filepath.Join(root, promotion.PolicyFile)
	writeTree(t, root, map[string]string{promotion.PolicyFile: strings.Replace(readFile(t, pol), "  production:\n",
		"  production:\n    freezes:\n      - {name: year-end, from: \""+from+"\", until: \""+until+"\"}\n", 1)})
	gittest.Run(t, top, "commit", "-q", "--no-gpg-sign", "-am", "production frozen")

	branch := "throughline/promote/checkout/production/4b7e2a91c3d5-1"
	check := []string{"promote", "check", "--repo", root, "--base", "main", "--head", branch}
	override := append([]string{"promote", "approve", "--override-freeze", "--reason", "hotfix for the checkout outage"}, repo...)
	for _, step := range []struct {
		name string
		key  sshkey.Key
		args []string
		code int
		want string
	}{
		{"check while frozen", alice, check, 3, `freeze "year-end"`},
		{"no reason", alice, append([]string{"promote", "approve", "--override-freeze", "--expires", "2h"}, repo...), 2, "--reason: a freeze override says why"},
		{"a reason without --override-freeze", alice, append([]string{"--reason", "x"}, approve...), 2, "--reason goes with --override-freeze"},
		{"no expiry", alice, override, 2, "--expires is required"},
		{"beyond a day", alice, append([]string{"--expires", "25h"}, override...), 2, "an override lasts at most 24h0m0s"},
		{"eve's key", eve, append([]string{"--expires", "2h"}, override...), 3, "is not in the allowed-signers file"},
		{"alice overrides", alice, append([]string{"--expires", "2h"}, override...), 0, "freeze override 1 of checkout-production-4b7e2a91c3d5-1 by alice@example.com"},
		{"check with one of two", alice, check, 3, "1 of the 2 signed freeze overrides it needs"},
		{"bob overrides", bob, append([]string{"--expires", "3h"}, override...), 0, "freeze override 2 of"},
		{"check passes", bob, check, 0, "overridden by alice@example.com, bob@example.com until "},
		{"status", bob, []string{"promote", "status", "--repo", root},
			0, "override: production checkout-production-4b7e2a91c3d5-1 (" + branch + "): by bob@example.com until "},
	} {
		signAs(t, top, step.key)
		r := runCLI(t, step.args...)
		if r.code != step.code || !strings.Contains(r.stdout+r.stderr, step.want) {
			t.Fatalf("%s: exit %d, want %d and %q:\n%s\n%s", step.name, r.code, step.code, step.want, r.stdout, r.stderr)
		}
	}
}
