//go:build e2e

package fluxcontrol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// chain is experiment 1, the positive chain through Flux: CI pins B in
// staging, kustomize-controller applies it, Pods run B, the notifier
// writes staging's evidence; promote propose, verify, two signed
// approvals and promote check; the PR merges; production's Kustomization
// applies the merge commit, Pods run B, the notifier writes production's
// evidence; the records and evidence in Git correlate every link.
func (l *lab) chain(t *testing.T) {
	l.tip()
	l.pin(stagingEnv, "1.5.0", l.b)
	stagingDesired := l.g.commit("ci: checkout 1.5.0 (B) in staging")
	stagingID := l.reconciling(stagingEnv, "1.5.0", l.b, 1, stagingDesired)
	stagingApplied := l.g.commit("promotion: " + stagingID + " RECONCILING")
	l.g.git("push", "-q", "origin", "main")
	l.applied(stagingEnv, l.b, "arrow B -> staging desired commit applied")
	l.roll(stagingEnv, l.b)
	l.podsRun(stagingEnv, l.b, "arrow staging live objects -> Pods run B")
	stEv, stTip := l.evidence(stagingEnv, stagingID, "arrow staging observed revision -> staging evidence")
	if stEv.DesiredRevision != stagingDesired || stEv.ObservedRevision != stagingApplied || stEv.ArtifactDigest != l.b {
		t.Fatalf("arrow staging desired/observed -> staging evidence: desired %s observed %s digest %s, want %s, %s (Flux's), B %s",
			stEv.DesiredRevision, stEv.ObservedRevision, stEv.ArtifactDigest, stagingDesired, stagingApplied, l.b)
	}
	l.ready(stagingEnv, stTip, "arrow staging evidence commit -> staging Ready")

	// The promotion to production, as its operators run it. Attempt 1 is
	// REJECTED by a reviewer; the same digest again is attempt 2, and the
	// rejected branch no longer counts as open: verify and approve pick
	// attempt 2 without --branch (issue 34).
	type proposal struct {
		Record *promotion.Record `json:"record"`
		Branch string            `json:"branch"`
	}
	propose := func(attempt int) proposal {
		l.tip()
		r := l.run("promote", "propose", "--repo", l.g.dir, "--app", accName, "--from", "staging", "--to", "production", "-o", "json")
		if r.Code != 0 {
			t.Fatalf("arrow staging evidence -> promote propose (attempt %d): exit %d: %s%s", attempt, r.Code, r.Stdout, r.Stderr)
		}
		var p proposal
		must(t, json.Unmarshal([]byte(r.Stdout), &p))
		if p.Record.Artifact.Digest != l.b || p.Record.Target.Environment != "production" || p.Record.Attempt != attempt {
			t.Fatalf("arrow staging evidence -> promote propose: proposed %s attempt %d to %s, want B %s attempt %d to production",
				p.Record.Artifact.Digest, p.Record.Attempt, p.Record.Target.Environment, l.b, attempt)
		}
		return p
	}
	rejected := propose(1)
	if r := l.run("promote", "reject", "--repo", l.g.dir, "--app", accName, "--to", "production", "--by", l.alice.Principal,
		"--reason", "the release notes are missing"); r.Code != 0 {
		t.Fatalf("arrow promote propose -> REJECTED: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	l.g.git("fetch", "-q", "origin", rejected.Branch)
	if rec := l.recordAt("origin/"+rejected.Branch, "production"); rec.State != promotion.Rejected {
		t.Fatalf("arrow promote propose -> REJECTED: %s on %s is %s", rec.PromotionID, rejected.Branch, rec.State)
	}
	p := propose(2)
	if r := l.run("promote", "verify", "--repo", l.g.dir, "--app", accName, "--to", "production"); r.Code != 0 || !strings.Contains(r.Stdout, p.Branch) {
		t.Fatalf("arrow staging evidence -> promote verify (attempt 2, picked without --branch): exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	merge := l.approveCheckMerge(p.Branch, "checkout 1.5.0 (B) to production")
	prodID := l.deliverProduction(merge, l.b, "B")

	// The record in Git correlates the whole chain.
	_, tip := l.g.onServer(promotion.RecordPath(accName, "production"))
	prod := l.recordAt(tip, "production")
	stag := l.recordAt(tip, "staging")
	prodEv := l.evidenceAt(tip, "production", prodID)
	v := prod.VerifiedIn
	for _, c := range []struct {
		arrow string
		ok    bool
		got   any
	}{
		{"source commit -> B", prod.Artifact.Equal(stag.Artifact) && prod.Artifact.Digest == l.b, prod.Artifact},
		{"B -> staging desired", v != nil && v.Environment == "staging" && v.DesiredRevision == stagingDesired, v},
		{"staging desired -> staging observed", v != nil && v.ObservedRevision == stagingApplied && stag.Accepted.ObservedRevision == stagingApplied, v},
		{"staging observed -> staging evidence", v != nil && v.RuntimeEvidence == evidence.Path("staging", accName, stagingID) && v.EvidenceCommit == stTip, v},
		{"staging evidence -> production desired", prod.Reconciling != nil && prod.Reconciling.DesiredRevision == merge, prod.Reconciling},
		{"production desired -> production observed", prod.Accepted != nil && prod.Accepted.ObservedRevision == prodEv.ObservedRevision &&
			prodEv.DesiredRevision == merge, prodEv},
		{"production observed -> production evidence", prod.Accepted != nil && prod.Accepted.RuntimeEvidence == evidence.Path("production", accName, prodID) &&
			prodEv.ArtifactDigest == l.b && prodEv.Decision == promotion.Accepted, prodEv},
	} {
		if !c.ok {
			t.Errorf("arrow %s (record at %.12s): %+v", c.arrow, tip, c.got)
		}
	}
}

// approveCheckMerge signs the approvals production needs (alice's and
// bob's keys, in the base's allowed-signers; without --branch: the attempt
// is the only open one), lands an unrelated commit on main (the storefront
// team's values), runs the PR job against main's new tip (promote check
// compares from the merge base, passes), merges the branch into main with
// a merge commit and pushes main as a forge would. It returns the merge
// commit.
func (l *lab) approveCheckMerge(branch, what string) string {
	t := l.t
	t.Helper()
	for _, k := range []sshkey.Key{l.alice, l.bob} {
		for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingkey", k.Private}, {"user.email", k.Principal}} {
			l.g.git("config", kv[0], kv[1])
		}
		r := l.run("promote", "approve", "--repo", l.g.dir, "--app", accName, "--to", "production", "--expires", "1h")
		if r.Code != 0 || !strings.Contains(r.Stdout, branch) {
			t.Fatalf("arrow promote approve (%s, %s picked without --branch): exit %d: %s%s", k.Principal, branch, r.Code, r.Stdout, r.Stderr)
		}
	}
	l.g.git("config", "--unset", "user.signingkey")
	l.tip()
	values := filepath.Join(l.g.dir, "apps", "storefront", "overlays", "staging", "values-staging.yaml")
	data, err := os.ReadFile(values)
	must(t, err)
	must(t, os.WriteFile(values, append(data, "# the storefront team's note\n"...), 0o644))
	l.g.commit("storefront: a note (an unrelated merge while " + branch + " is open)")
	l.g.git("push", "-q", "origin", "main")
	l.g.git("fetch", "-q", "origin", branch)
	if r := l.run("promote", "check", "--repo", l.g.dir, "--base", "origin/main", "--head", "origin/"+branch); r.Code != 0 {
		t.Fatalf("arrow approvals -> promote check: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	l.g.git("merge", "-q", "--no-ff", "-m", "Merge "+branch+": "+what, "origin/"+branch)
	l.g.git("push", "-q", "origin", "main")
	return l.g.git("rev-parse", "HEAD")
}

// deliverProduction follows a merged promotion of digest (called name)
// through production: kustomize-controller applies the merge commit (its
// own lastAppliedRevision), Pods run digest, the post-merge job records
// RECONCILING, Flux applies that commit and the notifier writes the
// evidence, which names merge as desired. It returns the promotion id.
func (l *lab) deliverProduction(merge, digest, name string) string {
	t := l.t
	t.Helper()
	l.applied(productionEnv, digest, "arrow production desired (merge commit) -> production live objects")
	l.roll(productionEnv, digest)
	l.ready(productionEnv, merge, "arrow production desired (merge commit) -> production observed revision")
	l.podsRun(productionEnv, digest, "arrow production observed revision -> Pods run "+name)
	r := l.run("promote", "reconcile", "--repo", l.g.dir, "--app", accName, "--to", "production", "--revision", merge)
	if r.Code != 0 {
		t.Fatalf("arrow merge -> promote reconcile: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	// The post-merge job's commit is the first on main after the merge: by
	// the time the tip is fetched, Flux may have applied it and the notifier
	// accepted it already (the tip is then the evidence commit).
	l.tip()
	tip := strings.Fields(l.g.git("rev-list", "--first-parent", "--reverse", merge+"..origin/main"))[0]
	rec := l.recordAt(tip, "production")
	if rec.State != promotion.Reconciling || rec.Reconciling.DesiredRevision != merge {
		t.Fatalf("arrow merge -> production RECONCILING: record %s %s", rec.PromotionID, rec.State)
	}
	ev, evTip := l.evidence(productionEnv, rec.PromotionID, "arrow production observed revision -> production evidence")
	if ev.DesiredRevision != merge || ev.ObservedRevision != tip || ev.ArtifactDigest != digest {
		t.Fatalf("arrow production observed revision -> production evidence: desired %s observed %s digest %s, want %s, %s, %s",
			ev.DesiredRevision, ev.ObservedRevision, ev.ArtifactDigest, merge, tip, digest)
	}
	l.ready(productionEnv, evTip, "arrow production evidence commit -> production Ready")
	return rec.PromotionID
}

// recordAt reads env's promotion record at commit.
func (l *lab) recordAt(commit, env string) *promotion.Record {
	l.t.Helper()
	p := promotion.RecordPath(accName, env)
	rec, err := promotion.Parse(p, []byte(l.g.git("show", commit+":"+p)))
	must(l.t, err)
	return rec
}

// evidenceAt reads the evidence of promotionID in env at commit.
func (l *lab) evidenceAt(commit, env, promotionID string) *evidence.Record {
	l.t.Helper()
	p := evidence.Path(env, accName, promotionID)
	ev, err := evidence.Parse(p, []byte(l.g.git("show", commit+":"+p)))
	must(l.t, err)
	return ev
}
