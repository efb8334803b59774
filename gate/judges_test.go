package gate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// TestJudgesChangeRefused: issue 32's changes to what judges production,
// each made by a pull request with no approval. Every one passed the
// every-PR check before (exit 0, "OK: no refusal"); each is now refused
// (judges-change and approval-count) naming production and the change old
// -> new, while the same kind of change to an unprotected environment is
// listed and passes.
func TestJudgesChangeRefused(t *testing.T) {
	t.Parallel()
	const policyFile = promotion.PolicyFile
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		// env whose judges change; what is a change it lists (its file
		// and field).
		env, what string
		refused   bool
		// setup edits the example before its first commit (nil: as is).
		setup func(t testing.TB, root string)
	}{
		{"production's signer key replaced", func(f *fixture) {
			f.write(map[string]string{"keys/ci.pub": "-----BEGIN PUBLIC KEY-----\nattacker\n-----END PUBLIC KEY-----\n"})
		}, "production", "keys/ci.pub", true, nil},
		{"production's scan maxAge 24h -> 720h", func(f *fixture) {
			f.replace(policyFile, "maxAge: 24h", "maxAge: 720h")
		}, "production", "throughline-policy.yaml environments.production.trust.attestations.vulnerabilityScan.maxAge", true, nil},
		{"production's approvers replaced", func(f *fixture) {
			f.replace(policyFile, "approvers: [alice@example.com, bob@example.com]", "approvers: [mallory@example.com, eve@example.com]")
		}, "production", "throughline-policy.yaml environments.production.approvers[0]", true, nil},
		{"production's minApprovals lowered", func(f *fixture) {
			f.replace(policyFile, "minApprovals: 2", "minApprovals: 1")
		}, "production", "throughline-policy.yaml environments.production.minApprovals", true, nil},
		{"a key added to the allowed signers", func(f *fixture) {
			f.write(map[string]string{"allowed-signers": f.read("allowed-signers") +
				"mallory@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFA5TSx5RsJD06AB4nnHySTEFl3Tay7B6QGi1RenlApZ\n"})
		}, "production", "allowed-signers key of mallory@example.com", true, nil},
		{"allowedSigners re-pointed at another file", func(f *fixture) {
			f.write(map[string]string{"keys/signers": f.read("allowed-signers")})
			f.replace(policyFile, "allowedSigners: allowed-signers", "allowedSigners: keys/signers")
		}, "production", "throughline-policy.yaml allowedSigners", true, nil},
		{"production unprotected", func(f *fixture) {
			f.replace(policyFile, "    protected: true\n", "")
		}, "production", "throughline-policy.yaml environments.production.protected", true, nil},
		{"production removed from the registry", func(f *fixture) {
			data := f.read(policyFile)
			i, j := strings.Index(data, "  production:\n"), strings.Index(data, "# The approvers' SSH")
			f.write(map[string]string{policyFile: data[:i] + data[j:]})
			f.git("-C", "gitops", "rm", "-q", "-r", "clusters/production", production)
		}, "production", "throughline-policy.yaml environments.production.cluster", true, nil},
		{"staging's runtime checks deleted", func(f *fixture) {
			f.git("-C", "gitops", "rm", "-q", staging+"/throughline-checks.yaml")
		}, "production", "runtime checks of checkout in staging", true, nil},
		{"an allow-list exception for every environment", func(f *fixture) {
			f.replace("throughline-allowlist.yaml", "    environments: [dev]\n", "")
		}, "production", "throughline-allowlist.yaml images[pattern=registry.example.test/vendor/debug-agent:*]", true, nil},
		{"a promotion parameter allowed everywhere", func(f *fixture) {
			f.replace(policyFile, "allowParameters: []", "allowParameters: [replicas]")
		}, "production", "throughline-policy.yaml allowParameters[0]", true, nil},
		{"staging's scan maxAge (staging is not protected)", func(f *fixture) {
			f.replace(policyFile, "maxAge: 168h", "maxAge: 720h")
		}, "staging", "throughline-policy.yaml environments.staging.trust.attestations.vulnerabilityScan.maxAge", false, nil},
		// Issue 38: production requires staging's verification summary,
		// signed by the notifier's key keys/summary.pub. Whoever can swap
		// that key (or what it must say) can mint "accepted in staging".
		{"production's summary key replaced", func(f *fixture) {
			f.write(map[string]string{"keys/summary.pub": attackerKey})
		}, "production", "keys/summary.pub", true, requireSummary},
		{"production's summary key re-pointed at another file", func(f *fixture) {
			f.write(map[string]string{"keys/mine.pub": attackerKey})
			f.replace(policyFile, "publicKey: keys/summary.pub", "publicKey: keys/mine.pub")
		}, "production", "throughline-policy.yaml environments.production.trust.attestations.verificationSummary.publicKey", true, requireSummary},
		{"production's summary asked of dev instead of staging", func(f *fixture) {
			f.replace(policyFile, "environment: staging # summary", "environment: dev # summary")
		}, "production", "throughline-policy.yaml environments.production.trust.attestations.verificationSummary.environment", true, requireSummary},
		{"production's summary requirement dropped", func(f *fixture) {
			f.replace(policyFile, summaryPolicy, "\n")
		}, "production", "throughline-policy.yaml environments.production.trust.attestations.verificationSummary.environment", true, requireSummary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureWith(t, func(root string) {
				if tc.setup != nil {
					tc.setup(t, root)
				}
			})
			f.branch("pr", func() { tc.change(f) })
			rep := f.check("pr")
			var d *JudgesDiff
			for i := range rep.Judges {
				if rep.Judges[i].Environment == tc.env {
					d = &rep.Judges[i]
				}
			}
			if d == nil {
				t.Fatalf("no change to what judges %s listed: %+v", tc.env, rep.Judges)
			}
			if !slices.ContainsFunc(d.Changes, func(c Finding) bool { return strings.TrimSpace(c.File+" "+c.Field) == tc.what }) {
				t.Fatalf("%s's changes do not include %s: %+v", tc.env, tc.what, d.Changes)
			}
			var refused []Finding
			for _, fd := range rep.Findings {
				if fd.Rule == RuleJudges && fd.Environment == tc.env {
					refused = append(refused, fd)
				}
			}
			// The wording: the change in words, and each refusal.
			golden.Compare(t, "testdata/"+t.Name()+".golden", []byte(strings.Join(append(d.Words(), "--- refused"), "\n")+"\n"+
				strings.Join(rep.Refusals, "\n")+"\n"))
			if !tc.refused {
				if len(refused) > 0 || d.Protected {
					t.Fatalf("refused a change to unprotected %s: %+v", tc.env, refused)
				}
				return
			}
			if len(refused) != len(d.Changes) || !slices.Contains(rules(rep), RuleApprovalCount) || !d.Protected || d.Required != 2 {
				t.Fatalf("%d of %d changes refused, rules %v, protected %v, %d required", len(refused), len(d.Changes), rules(rep), d.Protected, d.Required)
			}
			for _, fd := range refused {
				if fd.Old == "" || fd.New == "" || fd.Old == fd.New {
					t.Fatalf("refusal %+v does not say old -> new", fd)
				}
			}
		})
	}
}

// attackerKey is a public key nobody in the example holds.
const attackerKey = "-----BEGIN PUBLIC KEY-----\nattacker\n-----END PUBLIC KEY-----\n"

// summaryPolicy is production's requirement of a verification summary
// from staging (inserted after its scan rule by requireSummary).
const summaryPolicy = "\n        verificationSummary:\n          environment: staging # summary\n          publicKey: keys/summary.pub\n"

// requireSummary makes the example's production require staging's
// verification summary, signed by keys/summary.pub.
func requireSummary(t testing.TB, root string) {
	t.Helper()
	policy := filepath.Join(root, promotion.PolicyFile)
	data, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	const after = "          maxSeverity: medium\n          maxAge: 24h"
	if strings.Count(string(data), after) != 1 {
		t.Fatal("the example's production scan rule moved")
	}
	data = []byte(strings.Replace(string(data), after+"\n", after+summaryPolicy, 1))
	if err := os.WriteFile(policy, data, 0o644); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(root, "keys", "ci.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "keys", "summary.pub"), key, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestJudgesOfUnprotectedEnvironmentAdded: adding an environment that is
// not protected needs no approval, and production's judges do not move.
func TestJudgesOfUnprotectedEnvironmentAdded(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, func(string) {})
	f.branch("qa", func() {
		f.replace(promotion.PolicyFile, "  production:\n", "  qa:\n    cluster: qa-eu-1\n    paths: [\"apps/*/overlays/qa\"]\n    promotesFrom: [staging]\n  production:\n")
	})
	rep := f.check("qa")
	if !rep.OK {
		t.Fatalf("adding qa refused: %v", rep.Refusals)
	}
	for _, d := range rep.Judges {
		if d.Environment == "production" {
			t.Fatalf("production's judges moved: %v", d.Words())
		}
	}
}

// TestEvidenceSignersChangeRefused: the notifiers' keys judge what
// evidence carries a digest to production. A pull request that adds a key
// (one its author holds), removes one, or re-points evidenceSigners is a
// protected change.
func TestEvidenceSignersChangeRefused(t *testing.T) {
	t.Parallel()
	staging := sshkey.NewNotifier(t, "staging")
	rogue := sshkey.NewNotifier(t, "staging")
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		what   string
	}{
		{"a key added", func(f *fixture) {
			f.write(map[string]string{".throughline/evidence-signers": staging.Line() + rogue.Line()})
		}, ".throughline/evidence-signers key of staging"},
		{"the key removed", func(f *fixture) {
			f.write(map[string]string{".throughline/evidence-signers": "# rotated\n"})
		}, ".throughline/evidence-signers key of staging"},
		{"evidenceSigners dropped", func(f *fixture) {
			f.replace(promotion.PolicyFile, "evidenceSigners: .throughline/evidence-signers\n", "")
		}, "throughline-policy.yaml evidenceSigners"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureWith(t, func(root string) {
				gittest.Write(t, root, map[string]string{".throughline/evidence-signers": staging.Line()})
				data, err := os.ReadFile(filepath.Join(root, promotion.PolicyFile))
				if err != nil {
					t.Fatal(err)
				}
				gittest.Write(t, root, map[string]string{promotion.PolicyFile: string(data) + "evidenceSigners: .throughline/evidence-signers\n"})
			})
			f.branch("pr", func() { tc.change(f) })
			rep := f.check("pr")
			var refused []Finding
			for _, fd := range rep.Findings {
				if fd.Rule == RuleJudges && fd.Environment == "production" && strings.TrimSpace(fd.File+" "+fd.Field) == tc.what {
					refused = append(refused, fd)
				}
			}
			if len(refused) == 0 || rep.OK {
				t.Fatalf("%s not refused for production: %+v", tc.what, rep.Findings)
			}
		})
	}
}
