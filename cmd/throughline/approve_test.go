package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
)

// unsignedApprovals drops the example's production approvers from the
// repository at root (the promote tests of other gates approve unsigned).
func unsignedApprovals(t *testing.T, root string) {
	t.Helper()
	var keep []string
	for _, l := range strings.SplitAfter(readFile(t, filepath.Join(root, "throughline-policy.yaml")), "\n") {
		if s := strings.TrimSpace(l); !strings.HasPrefix(s, "approvers:") && !strings.HasPrefix(s, "minApprovals:") {
			keep = append(keep, l)
		}
	}
	writeTree(t, root, map[string]string{"throughline-policy.yaml": strings.Join(keep, "")})
}

// signAs makes git in top sign with k (repository config).
func signAs(t *testing.T, top string, k sshkey.Key) {
	t.Helper()
	gittest.Run(t, top, "config", "gpg.format", "ssh")
	gittest.Run(t, top, "config", "user.signingkey", k.Private)
	gittest.Run(t, top, "config", "user.email", k.Principal)
	gittest.Run(t, top, "config", "user.name", k.Principal)
}

// TestPromoteSignedApprovals: the example's production needs two signed
// approvals of alice and bob; an unlisted key, one approver twice and the
// check before the second approval are refused; promote reject ends an
// attempt.
func TestPromoteSignedApprovals(t *testing.T) {
	top, root := promoteFixture(t)
	alice, bob, eve := sshkey.New(t, "alice@example.com"), sshkey.New(t, "bob@example.com"), sshkey.New(t, "eve@example.com")
	example, err := os.ReadFile(filepath.Join(exampleRepo, "throughline-policy.yaml"))
	if err == nil {
		example, err = testenv.WithoutTrust(example) // made-up digests, no evidence
	}
	if err != nil {
		t.Fatal(err)
	}
	// The example's policy with the approvers' keys of this test (and the
	// fixture's notifier key: staging's evidence is signed).
	writeTree(t, root, map[string]string{"throughline-policy.yaml": listEvidenceSigners(string(example)), "allowed-signers": sshkey.Signers(alice, bob)})
	gittest.Run(t, top, "commit", "-q", "-am", "approvers")
	repo := []string{"--repo", root, "--app", "checkout", "--to", "production"}
	if r := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production"); r.code != 0 {
		t.Fatalf("propose: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, append([]string{"promote", "verify"}, repo...)...); r.code != 0 {
		t.Fatalf("verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	branch := "throughline/promote/checkout/production/4b7e2a91c3d5-1"
	approve := append([]string{"promote", "approve", "--expires", "2h"}, repo...)
	check := []string{"promote", "check", "--repo", root, "--base", "main", "--head", branch}
	for _, step := range []struct {
		name string
		key  sshkey.Key
		args []string
		code int
		want string
	}{
		{"eve's key is not listed", eve, approve, 3, "is not in the allowed-signers file"},
		{"alice approves", alice, approve, 0, "signed approval 1 of"},
		{"alice again", alice, approve, 3, "alice@example.com already approved"},
		{"check with one of two", alice, check, 3, "1 of the 2 signed approvals production needs"},
		{"bob cross-checked as alice", bob, append([]string{"--approver", "alice@example.com"}, approve...), 3, "your signing key is bob@example.com's"},
		{"bob approves", bob, approve, 0, "APPROVED checkout-production-4b7e2a91c3d5-1 by alice@example.com, bob@example.com"},
		{"check passes", bob, check, 0, ""},
		{"reject", bob, append([]string{"promote", "reject", "--reason", "the release notes are wrong"}, repo[:]...), 0, "REJECTED"},
		{"check of a rejected record", bob, check, 3, "the release notes are wrong"},
	} {
		signAs(t, top, step.key)
		r := runCLI(t, step.args...)
		if r.code != step.code || !strings.Contains(r.stdout+r.stderr, step.want) {
			t.Fatalf("%s: exit %d, want %d and %q:\n%s\n%s", step.name, r.code, step.code, step.want, r.stdout, r.stderr)
		}
	}
}
