package promote

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// stagingReconciling writes the staging record: newDigest RECONCILING in
// staging at desired (its VERIFIED and APPROVED gates as promote records
// them).
func (f *fixture) stagingReconciling(desired string) {
	t := f.t
	_, hash, err := gitops.WorkTree(f.root).Render(context.Background(), "apps/checkout/overlays/staging")
	must(t, err)
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("checkout", 1,
		promotion.Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + newDigest, Digest: newDigest, SourceCommit: strings.Repeat("1", 40)},
		promotion.Target{Environment: "staging", Path: "apps/checkout/overlays/staging", Cluster: "staging-eu-1", RenderedHash: hash,
			BaseRenderedHash: hash, Renderer: renderer},
		t0, "test")
	must(t, err)
	for _, err := range []error{
		rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40),
			RenderedHash: "sha256:" + strings.Repeat("3", 64), RuntimeEvidence: "evidence/dev/checkout/1.json"}, t0, "test"),
		rec.Approve("alice", rec.InputFor(renderer), t0.Add(48*time.Hour), t0),
		rec.Reconcile(desired, t0, "test"),
	} {
		must(t, err)
	}
	data, err := rec.Marshal()
	must(t, err)
	f.write(map[string]string{promotion.RecordPath("checkout", "staging"): string(data)})
}

// acceptStaging has the notifier's Git sink commit staging's evidence
// (ACCEPTED at desired, written at at, one Pod running newDigest) and the
// record moved to ACCEPTED on main, as the notifier does; the work tree
// follows.
func (f *fixture) acceptStaging(desired string, at time.Time) {
	t := f.t
	_, err := f.sink().Write(context.Background(), "checkout", "staging", desired,
		func(_ context.Context, rec *promotion.Record, _ string) (*evidence.Record, error) {
			checks, soakStarted := f.passedChecks("apps/checkout/overlays/staging", at)
			return &evidence.Record{Decision: promotion.Accepted, ObservedRevision: desired, RenderedHash: rec.Target.RenderedHash,
				Acceptance: "checkout-staging/checkout", Time: at, Checks: checks, SoakStartedAt: soakStarted, VerifiedAt: &at,
				Pods: []evidence.Pod{{Workload: "Deployment/checkout-staging/checkout", Container: "checkout", Pod: "checkout-7d9f-x1", Pods: 2,
					Declared: newDigest, ImageID: "ghcr.io/throughline-dev/checkout@" + newDigest, Outcome: "Verified", Match: "Exact"}},
				ReportedBy: evidence.Reporter{Source: "argocd", Object: "Application/argocd/checkout-staging"}}, nil
		})
	must(t, err)
	f.git("reset", "-q", "--hard")
}

// sink is the notifier's Git sink on main, signing with the fixture's
// notifier key when the policy lists it (newFixture; a chart fixture's
// policy does not).
func (f *fixture) sink() *evidence.GitSink {
	sink := &evidence.GitSink{Repo: f.repo.Repo, Branch: "main"}
	if f.notifier.Signer != nil {
		sink.Signer = f.notifier
	}
	return sink
}

// evidencePath is staging's evidence file.
func (f *fixture) evidencePath() string {
	return evidence.Path("staging", "checkout", promotion.AttemptKey{App: "checkout", Digest: newDigest, Environment: "staging", Attempt: 1}.ID())
}

// rewriteAcceptance rewrites main's last commit (the notifier's) with the
// evidence file and staging's record as change leaves them, the evidence
// signed again with the notifier's key: a hand-made acceptance commit by
// someone who holds that key (the checks behind the signature still hold).
func (f *fixture) rewriteAcceptance(change func(ev map[string]string)) {
	f.t.Helper()
	files := map[string]string{"evidence": f.read(f.evidencePath()), "record": f.read(promotion.RecordPath("checkout", "staging"))}
	change(files)
	sig, err := evidence.Sign([]byte(files["evidence"]), f.notifier)
	must(f.t, err)
	f.write(map[string]string{f.evidencePath(): files["evidence"], promotion.RecordPath("checkout", "staging"): files["record"],
		evidence.SignaturePath(f.evidencePath()): string(sig)})
	f.git("commit", "-q", "-a", "--amend", "--no-edit")
}

// TestSourceEvidenceRefusals: the attacks on the VERIFIED gate. Each leaves
// staging's record ACCEPTED for the digest on main; propose and verify
// both refuse, naming why.
func TestSourceEvidenceRefusals(t *testing.T) {
	t.Parallel()
	other := "sha256:" + strings.Repeat("7", 64)
	record := errorLines(t, "testdata/source-evidence-refusals.golden", 26)
	for _, tc := range []struct {
		name   string
		attack func(f *fixture)
		code   int
		want   string // refused: what the golden file says; invalid: the folder of the file named
	}{
		{"observed revision that does not descend from the desired one", func(f *fixture) {
			f.git("checkout", "-q", "--orphan", "side")
			side := f.commit("another line of history")
			f.git("checkout", "-q", "-f", "main")
			f.rewriteAcceptance(func(m map[string]string) {
				old := f.git("log", "-1", "--format=%H", "main~2")
				m["evidence"] = strings.Replace(strings.ReplaceAll(m["evidence"], `"observedRevision": "`+old, `"observedRevision": "`+side),
					`"time"`, `"reason": "later",`+"\n  "+`"time"`, 1)
				m["record"] = strings.Replace(m["record"], "observedRevision: "+old, "observedRevision: "+side, 1)
			})
		}, exitcode.Refused, "is neither the desired commit"},
		{"runtime evidence that does not exist", func(f *fixture) {
			f.git("rm", "-q", "gitops/"+f.evidencePath())
			f.git("commit", "-q", "--amend", "--no-edit")
		}, exitcode.Refused, "which does not exist at"},
		{"evidence deleted after the acceptance", func(f *fixture) {
			f.git("rm", "-q", "gitops/"+f.evidencePath())
			f.commit("tidy up")
		}, exitcode.Refused, "changed after"},
		{"runtime evidence naming another file", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["record"] = strings.Replace(m["record"], "runtimeEvidence: evidence/staging/", "runtimeEvidence: evidence/dev/", 1)
			})
		}, exitcode.Refused, "not the notifier's evidence file"},
		{"evidence for another digest", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["evidence"] = strings.Replace(m["evidence"], `"artifactDigest": "`+newDigest, `"artifactDigest": "`+other, 1)
			})
		}, exitcode.Refused, "it is for digest " + other},
		{"a Pod imageID with another digest", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["evidence"] = strings.Replace(m["evidence"], `"imageID": "ghcr.io/throughline-dev/checkout@`+newDigest, `"imageID": "ghcr.io/throughline-dev/checkout@`+other, 1)
			})
		}, exitcode.Refused, "runs imageID ghcr.io/throughline-dev/checkout@" + other},
		{"no Pod of the digest", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["evidence"] = strings.Replace(m["evidence"], `"declared": "`+newDigest, `"declared": "`+other, 1)
			})
		}, exitcode.Refused, "no Pod runs a container declared with " + newDigest},
		{"evidence older than evidenceMaxAge", func(f *fixture) {
			f.write(map[string]string{promotion.PolicyFile: f.read(promotion.PolicyFile) + "evidenceMaxAge: 1s\n"})
			f.commit("evidence at most a second old")
			time.Sleep(1100 * time.Millisecond) // the evidence is dated to the second: now it is over a second old
		}, exitcode.Refused, "older than the evidenceMaxAge 1s"},
		{"evidence dated before the commit it observes", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["evidence"] = regexp.MustCompile(`"time": "[^"]*"`).ReplaceAllString(m["evidence"], `"time": "2025-06-01T10:00:00Z"`)
			})
		}, exitcode.Refused, "before the observed commit"},
		{"verified after its own decision", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["evidence"] = regexp.MustCompile(`"verifiedAt": "[^"]*"`).ReplaceAllString(m["evidence"],
					`"verifiedAt": "`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"`)
			})
		}, exitcode.Refused, "after its own ACCEPTED decision"},
		{"revisions that are commits of no repository", func(f *fixture) {
			fake := strings.Repeat("ab", 20)
			f.rewriteAcceptance(func(m map[string]string) {
				old := f.git("log", "-1", "--format=%H", "main~2")
				m["evidence"] = strings.ReplaceAll(m["evidence"], old, fake)
				m["record"] = strings.ReplaceAll(m["record"], old, fake)
			})
		}, exitcode.Refused, "is not a commit in the history of"},
		{"a hand-written file that is not evidence/v1", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["evidence"] = "environment: staging\ndigest: " + newDigest + "\ndesiredRevision: x\nobservedRevision: y\n"
			})
		}, exitcode.Invalid, f0(evidence.Path("staging", "checkout", ""))},
		{"a HALTED decision", func(f *fixture) {
			f.rewriteAcceptance(func(m map[string]string) {
				m["evidence"] = strings.Replace(m["evidence"], `"decision": "ACCEPTED"`, `"decision": "HALTED", "reason": "image mismatch"`, 1)
			})
		}, exitcode.Refused, "it says HALTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t)
			p := f.propose()
			tc.attack(f)
			check := func(what string, err error) {
				t.Helper()
				var ii *exitcode.InvalidInput
				if tc.code == exitcode.Refused {
					refusedBy(t, err, ledger.RuleSourceEvidence)
				} else if exitcode.Code(err) != tc.code || !errors.As(err, &ii) || !strings.HasPrefix(ii.File, tc.want) {
					t.Fatalf("%s: %v (exit %d), want exit %d naming a file of %s", what, err, exitcode.Code(err), tc.code, tc.want)
				}
				record(tc.name+", "+what, err) // tc.want
			}
			_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: time.Now()})
			check("verify", err)
			if tip := f.git("rev-parse", p.Branch); tip != p.Commit {
				t.Fatalf("a refused verify moved %s to %s", p.Branch, tip)
			}
			f.git("branch", "-q", "-D", p.Branch)
			_, err = Propose(ctx, f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
			check("propose", err)
		})
	}
}

// TestEvidenceSignatureRefusals: the sequence. Staging's record
// rewritten to ACCEPTED by an arbitrary author, with an evidence/v1 file
// edited to match, carries nothing to production: evidence counts only
// signed by a notifier key the base's evidenceSigners lists for staging.
func TestEvidenceSignatureRefusals(t *testing.T) {
	t.Parallel()
	record := errorLines(t, "testdata/evidence-signature-refusals.golden", 8)
	for _, tc := range []struct {
		name   string
		attack func(f *fixture)
		reason string
	}{
		{"hand-written evidence without a signature", func(f *fixture) {
			ev := f.read(f.evidencePath())
			f.git("rm", "-q", "gitops/"+evidence.SignaturePath(f.evidencePath()))
			f.write(map[string]string{f.evidencePath(): strings.Replace(ev, `"Verified"`, `"Verified" `, 1)})
			f.git("commit", "-q", "-a", "--amend", "--no-edit")
		}, "no signature"},
		{"evidence edited after the notifier signed it", func(f *fixture) {
			ev := f.read(f.evidencePath())
			f.write(map[string]string{f.evidencePath(): strings.Replace(ev, `"Verified"`, `"Verified" `, 1)})
			f.git("commit", "-q", "-a", "--amend", "--no-edit")
		}, "does not verify"},
		{"evidence signed by a key the policy does not list", func(f *fixture) {
			f.notifier = sshkey.NewNotifier(t, "staging")
			f.rewriteAcceptance(func(map[string]string) {})
		}, "lists no such key"},
		{"evidence signed by production's notifier", func(f *fixture) {
			prod := sshkey.NewNotifier(t, "production")
			f.write(map[string]string{sshkey.EvidenceSignersFile: f.notifier.Line() + prod.Line()})
			f.notifier = prod
			f.rewriteAcceptance(func(map[string]string) {})
		}, "for production, not for staging"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t)
			p := f.propose()
			tc.attack(f)
			_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: time.Now()})
			refusedBy(t, err, ledger.RuleEvidenceSignature)
			record(tc.name+", verify", err)
			f.git("branch", "-q", "-D", p.Branch)
			_, err = Propose(ctx, f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
			if re := refusedBy(t, err, ledger.RuleEvidenceSignature); re.File != f.evidencePath() || !strings.Contains(re.Reason, tc.reason) {
				t.Fatalf("propose: %+v, want a refusal naming %s: %s", re, f.evidencePath(), tc.reason)
			}
			record(tc.name+", propose", err)
		})
	}
}

// f0 is the folder of a path with its trailing ".json" name cut.
func f0(p string) string { return strings.TrimSuffix(p, ".json") }

// TestVerifySource: the source is found when one environment accepted the
// digest, and --from naming one that did not is refused.
func TestVerifySource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.propose()
	_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", From: "dev", Now: time.Now()})
	if re := refusedBy(t, err, ledger.RuleSourceEvidence); re.File != promotion.RecordPath("checkout", "dev") {
		t.Fatalf("verify from dev: %v, want a refusal of %s", err, promotion.RecordPath("checkout", "dev"))
	}
	errorLines(t, "testdata/verify-source.golden", 1)("verify from dev", err) // "does not exist"
}

// TestExampleEvidence: the example repository's evidence is signed by no
// notifier and its policy lists no evidenceSigners: the gates refuse it
// (its revisions, c0ffee..., are not commits of the history either). The
// example that walks the chain with real commits and a notifier key is
// issue 35's.
func TestExampleEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &fixture{t: t, top: t.TempDir()}
	f.root = filepath.Join(f.top, "gitops")
	copyDir(t, exampleRepo, f.root)
	f.git("init", "-q", "-b", "main")
	commit := f.commit("the example")
	repo, err := gitops.Open(ctx, f.root)
	must(t, err)
	at, _ := time.Parse(time.RFC3339, "2026-11-21T00:00:00Z")
	_, err = ledger.ReadSourceEvidence(ctx, repo, commit, "checkout", "staging", oldDigest, at)
	if re := refusedBy(t, err, ledger.RuleEvidenceSignature); !strings.Contains(re.Reason, "the policy lists no evidenceSigners") {
		t.Fatalf("the example's staging evidence: %v, want it refused for want of a notifier key", err)
	}
}
