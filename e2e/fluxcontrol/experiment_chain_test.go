//go:build e2e

package fluxcontrol

import (
	"encoding/json"
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

	// The promotion to production, as its operators run it.
	l.tip()
	r := l.run("promote", "propose", "--repo", l.g.dir, "--app", accName, "--from", "staging", "--to", "production", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("arrow staging evidence -> promote propose: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	var p struct {
		Record *promotion.Record `json:"record"`
		Branch string            `json:"branch"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &p))
	if p.Record.Artifact.Digest != l.b || p.Record.Target.Environment != "production" {
		t.Fatalf("arrow staging evidence -> promote propose: proposed %s to %s, want B %s to production", p.Record.Artifact.Digest, p.Record.Target.Environment, l.b)
	}
	if r := l.run("promote", "verify", "--repo", l.g.dir, "--app", accName, "--to", "production", "--branch", p.Branch); r.Code != 0 {
		t.Fatalf("arrow staging evidence -> promote verify: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
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
// bob's keys, in the base's allowed-signers), runs the PR job (promote
// check, passes), merges the branch into main with a merge commit and
// pushes main as a forge would. It returns the merge commit.
func (l *lab) approveCheckMerge(branch, what string) string {
	t := l.t
	t.Helper()
	for _, k := range []sshkey.Key{l.alice, l.bob} {
		for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingkey", k.Private}, {"user.email", k.Principal}} {
			l.g.git("config", kv[0], kv[1])
		}
		r := l.run("promote", "approve", "--repo", l.g.dir, "--app", accName, "--to", "production", "--branch", branch, "--expires", "1h")
		if r.Code != 0 {
			t.Fatalf("arrow promote approve (%s): exit %d: %s%s", k.Principal, r.Code, r.Stdout, r.Stderr)
		}
	}
	l.g.git("config", "--unset", "user.signingkey")
	l.tip()
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
	tip := l.tip()
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
