package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/promote"
	"github.com/throughline-dev/throughline/promotion"
)

// rollbackFixture is a Git repository whose production record was ACCEPTED
// for digest a, then for digest b (b is desired now). Both images are in an
// in-process registry at reg.
type rollbackFixture struct {
	top, reg, a, b string
	// acceptedA is the commit holding a's ACCEPTED record and evidence.
	acceptedA string
}

const rbOverlay = "apps/web/overlays/production"

func rbKustomization(reg, tag, digest string) string {
	return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: web-production\nresources:\n  - ../../base\nimages:\n  # the artifact\n  - name: " +
		reg + "/web\n    newTag: \"" + tag + "@" + digest + "\"\n"
}

func rbDeployment(reg, annotations string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n" + annotations + "spec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: " + reg + "/web:1.0.0\n"
}

// rbAccept writes the overlay with digest, an ACCEPTED record for it and
// the notifier's evidence file, and commits them; it returns the commit.
func rbAccept(t *testing.T, top, reg, tag, digest string, attempt int) string {
	t.Helper()
	return rbAcceptWith(t, top, reg, tag, digest, attempt, true)
}

// rbAcceptWith is rbAccept, the evidence file written only when withEvidence.
func rbAcceptWith(t *testing.T, top, reg, tag, digest string, attempt int, withEvidence bool) string {
	t.Helper()
	writeTree(t, top, map[string]string{rbOverlay + "/kustomization.yaml": rbKustomization(reg, tag, digest)})
	_, hash, err := rawRender(top, rbOverlay)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("web", attempt,
		promotion.Artifact{Image: reg + "/web:" + tag + "@" + digest, Digest: digest, SourceCommit: strings.Repeat("1", 40)},
		promotion.Target{Environment: "production", Path: rbOverlay, Cluster: "production", RenderedHash: hash, BaseRenderedHash: hash, Renderer: buildVersion()},
		t0, "test")
	if err != nil {
		t.Fatal(err)
	}
	// The overlay is the desired commit the controller observed.
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "production desires "+tag)
	rev := gittest.Run(t, top, "rev-parse", "HEAD")
	for _, err := range []error{
		rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40), RenderedHash: hash, RuntimeEvidence: "evidence/staging/web/x.json"}, t0, "test"),
		rec.Approve("alice", rec.InputFor(buildVersion()), t0.Add(48*time.Hour), t0),
		rec.Reconcile(rev, t0, "test"),
		rec.Accept(rev, "evidence/production/web/"+rec.PromotionID+".json", t0, "test"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{promotion.RecordPath("web", "production"): string(data)}
	if withEvidence {
		ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: "web", Environment: "production", PromotionID: rec.PromotionID,
			Decision: promotion.Accepted, Image: rec.Artifact.Image, ArtifactDigest: digest, DesiredRevision: rev, ObservedRevision: rev,
			DesiredRenderedHash: hash, RenderedHash: hash, ReportedBy: evidence.Reporter{Source: "flux"}, Time: time.Now().UTC().Truncate(time.Second),
			Pods: []evidence.Pod{{Workload: "Deployment/default/web", Container: "web", Pod: "web-1", Pods: 2, Declared: digest,
				ImageID: reg + "/web@" + digest, Outcome: "Verified", Match: "Exact"}}}
		evData, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		files[evidence.Path("production", "web", rec.PromotionID)] = string(evData)
	}
	signEvidence(t, top, files)
	writeTree(t, top, files)
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "accepted "+tag)
	return gittest.Run(t, top, "rev-parse", "HEAD")
}

func newRollbackFixture(t *testing.T, annotations string) *rollbackFixture {
	t.Helper()
	reg := startRegistry(t)
	f := &rollbackFixture{top: t.TempDir(), reg: reg}
	f.a = pushRandomImage(t, reg+"/web:1.0.0")
	f.b = pushRandomImage(t, reg+"/web:1.1.0")
	writeTree(t, f.top, map[string]string{
		"apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"apps/web/base/deployment.yaml":    rbDeployment(reg, annotations),
	})
	gittest.Run(t, f.top, "init", "-q", "-b", "main")
	f.acceptedA = rbAccept(t, f.top, reg, "1.0.0", f.a, 1)
	rbAccept(t, f.top, reg, "1.1.0", f.b, 1)
	return f
}

func TestRollbackPrevious(t *testing.T) {
	f := newRollbackFixture(t, "")
	mainBefore := gittest.Run(t, f.top, "rev-parse", "main")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous", "-o", "json")
	if res.code != exitcode.OK {
		t.Fatalf("rollback: %d %s %s", res.code, res.stdout, res.stderr)
	}
	var out promote.RollbackResult
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	// attempt 1 of digest a was accepted before: the rollback is attempt 2.
	wantBranch := "throughline/promote/web/production/" + strings.TrimPrefix(f.a, "sha256:")[:12] + "-2"
	if out.Proposal.Branch != wantBranch || out.Proposal.Record.State != promotion.Verified || out.Proposal.Record.Artifact.Digest != f.a || out.From != f.b {
		t.Fatalf("result %+v", out)
	}
	// Born VERIFIED by production's own acceptance of a (attempt 1).
	v := out.Proposal.Record.VerifiedIn
	wantID := promotion.AttemptKey{App: "web", Digest: f.a, Environment: "production", Attempt: 1}.ID()
	if !v.IsPriorAcceptance() || v.Environment != "production" || *v.PriorAcceptance != (promotion.PriorAcceptance{PromotionID: wantID, Evidence: evidence.Path("production", "web", wantID), Commit: f.acceptedA}) {
		t.Fatalf("verifiedIn %+v %+v", v, v.PriorAcceptance)
	}
	// History is untouched: main did not move, the branch descends from it.
	if gittest.Run(t, f.top, "rev-parse", "main") != mainBefore || gittest.Run(t, f.top, "status", "--porcelain") != "" {
		t.Fatal("rollback changed main or the work tree")
	}
	gittest.Run(t, f.top, "merge-base", "--is-ancestor", mainBefore, out.Proposal.Branch)
	k := gittest.Run(t, f.top, "show", out.Proposal.Branch+":"+rbOverlay+"/kustomization.yaml")
	if k != strings.TrimSpace(rbKustomization(f.reg, "1.0.0", f.a)) {
		t.Fatalf("overlay on the branch:\n%s", k)
	}
	if files := gittest.Run(t, f.top, "diff", "--name-only", mainBefore, out.Proposal.Branch); files != "apps/web/overlays/production/kustomization.yaml\npromotion/web/production.yaml" {
		t.Fatalf("changed files: %s", files)
	}
	if msg := gittest.Run(t, f.top, "log", "-1", "--format=%B", out.Proposal.Branch); !strings.Contains(msg, "Rollback-From: "+f.b) || !strings.Contains(msg, "Rollback-To: "+f.a) {
		t.Fatalf("commit message: %s", msg)
	}
	// The same request again is the existing attempt.
	again := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", f.a, "-o", "json")
	if again.code != exitcode.OK || !strings.Contains(again.stdout, `"existing": true`) {
		t.Fatalf("again: %d %s %s", again.code, again.stdout, again.stderr)
	}
}

func TestRollbackNeverAccepted(t *testing.T) {
	f := newRollbackFixture(t, "")
	other := pushRandomImage(t, f.reg+"/web:2.0.0")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", other)
	if res.code != exitcode.Refused || !strings.Contains(res.stderr, "never ACCEPTED in production") {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
	cur := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", f.b)
	if cur.code != exitcode.Refused || !strings.Contains(cur.stderr, "already the desired digest") {
		t.Fatalf("want refusal of the current digest: %d %s", cur.code, cur.stderr)
	}
	if b := gittest.Run(t, f.top, "branch", "--list", "throughline/*"); b != "" {
		t.Fatalf("a refused rollback made branches: %s", b)
	}
}

func TestRollbackDeletedFromRegistry(t *testing.T) {
	f := newRollbackFixture(t, "")
	req, _ := http.NewRequest(http.MethodDelete, "http://"+f.reg+"/v2/web/manifests/"+f.a, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete: %s", resp.Status)
	}
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous")
	if res.code != exitcode.Refused || !strings.Contains(res.stderr, "no longer exists in the registry") {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
}

func TestRollbackIrreversibleMigration(t *testing.T) {
	f := newRollbackFixture(t, "  annotations:\n    throughline.dev/irreversible-migration: \"true\"\n")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous")
	if res.code != exitcode.Refused || !strings.Contains(res.stderr, "--accept-irreversible-migration") || !strings.Contains(res.stderr, "Deployment.apps web-production/web") {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
	ok := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous", "--accept-irreversible-migration")
	if ok.code != exitcode.OK || !strings.Contains(ok.stderr, "irreversible migration") {
		t.Fatalf("with the flag: %d %s %s", ok.code, ok.stdout, ok.stderr)
	}
}

func TestRollbackNoRecord(t *testing.T) {
	top := t.TempDir()
	writeTree(t, top, map[string]string{"README": "x\n"})
	gittest.Run(t, top, "init", "-q", "-b", "main")
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "empty")
	res := runCLI(t, "rollback", "--repo", top, "--app", "web", "--env", "production", "--to", "previous")
	if res.code != exitcode.Refused {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
}

// The old digest with today's overlay must still pass policy: a tag-only
// sidecar added since is refused.
func TestRollbackRefusedByPolicy(t *testing.T) {
	f := newRollbackFixture(t, "")
	dep := rbDeployment(f.reg, "") + "        - name: sidecar\n          image: " + f.reg + "/sidecar:latest\n"
	writeTree(t, f.top, map[string]string{"apps/web/base/deployment.yaml": dep})
	gittest.Run(t, f.top, "commit", "-q", "-am", "sidecar by tag")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous")
	if res.code != exitcode.Refused || !strings.Contains(res.stderr, "sidecar") {
		t.Fatalf("want policy refusal: %d %s", res.code, res.stderr)
	}
}

// The rollback's record passes the PR gate once approved, like any
// promotion: its prior acceptance is re-read from Git. A forged claim (an
// attempt production never accepted at the named commit, or a commit whose
// evidence is for another digest) is refused by check.
func TestRollbackPassesCheckForgedClaimRefused(t *testing.T) {
	f := newRollbackFixture(t, "")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous", "-o", "json")
	if res.code != exitcode.OK {
		t.Fatalf("rollback: %d %s %s", res.code, res.stdout, res.stderr)
	}
	var out promote.RollbackResult
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	branch := out.Proposal.Branch
	chk := runCLI(t, "promote", "check", "--repo", f.top, "--base", "main", "--head", branch)
	if chk.code != exitcode.Refused || !strings.Contains(chk.stdout, "not approved") || strings.Contains(chk.stdout, "staging evidence") || strings.Contains(chk.stdout, "prior acceptance") {
		t.Fatalf("check before approval: %d\n%s", chk.code, chk.stdout)
	}
	if r := runCLI(t, "promote", "approve", "--repo", f.top, "--app", "web", "--to", "production", "--branch", branch, "--approver", "alice", "--expires", "2h"); r.code != exitcode.OK {
		t.Fatalf("approve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if chk := runCLI(t, "promote", "check", "--repo", f.top, "--base", "main", "--head", branch); chk.code != exitcode.OK {
		t.Fatalf("check of the approved rollback: %d\n%s\n%s", chk.code, chk.stdout, chk.stderr)
	}

	// Forge the claim on a copy of the approved branch.
	approved := readRecordAt(t, f.top, branch)
	acceptedB := gittest.Run(t, f.top, "rev-parse", "main")
	for name, tc := range map[string]struct {
		edit func(p *promotion.PriorAcceptance)
		want string
	}{
		// main's tip holds b's acceptance: attempt 1 of a is not ACCEPTED there.
		"attempt never ACCEPTED at that commit": {func(p *promotion.PriorAcceptance) { p.Commit = acceptedB }, "that attempt never reached ACCEPTED in that commit"},
		"commit not on the base":                {func(p *promotion.PriorAcceptance) { p.Commit = gittest.Run(t, f.top, "rev-parse", branch) }, "not in the history of the base"},
	} {
		t.Run(name, func(t *testing.T) {
			forged := *approved
			v := *approved.VerifiedIn
			p := *v.PriorAcceptance
			tc.edit(&p)
			v.PriorAcceptance = &p
			forged.VerifiedIn = &v
			data, err := forged.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			fb := "forged/" + strings.ReplaceAll(name, " ", "-")
			gittest.Run(t, f.top, "branch", fb, branch)
			gittest.Run(t, f.top, "checkout", "-q", fb)
			writeTree(t, f.top, map[string]string{promotion.RecordPath("web", "production"): string(data)})
			gittest.Run(t, f.top, "commit", "-q", "-am", "forged claim")
			gittest.Run(t, f.top, "checkout", "-q", "main")
			chk := runCLI(t, "promote", "check", "--repo", f.top, "--base", "main", "--head", fb)
			if chk.code != exitcode.Refused || !strings.Contains(chk.stdout, tc.want) {
				t.Fatalf("check of a forged claim: %d, want a refusal saying %q\n%s\n%s", chk.code, tc.want, chk.stdout, chk.stderr)
			}
		})
	}
}

// An acceptance without evidence (the record says ACCEPTED, no evidence
// file in that commit) is not a rollback target: naming it is refused with
// the reason, and "previous" passes over it with a warning.
func TestRollbackUnprovenAcceptance(t *testing.T) {
	f := newRollbackFixture(t, "")
	c := pushRandomImage(t, f.reg+"/web:1.2.0")
	rbAcceptWith(t, f.top, f.reg, "1.2.0", c, 1, false) // by hand, no evidence
	d := pushRandomImage(t, f.reg+"/web:1.3.0")
	rbAccept(t, f.top, f.reg, "1.3.0", d, 1)
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", c)
	if res.code != exitcode.Refused || !strings.Contains(res.stderr, "claimed without proof") || !strings.Contains(res.stderr, "which does not exist at") {
		t.Fatalf("rollback to an unproven digest: %d %s", res.code, res.stderr)
	}
	prev := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous", "-o", "json")
	if prev.code != exitcode.OK || !strings.Contains(prev.stderr, "acceptance claimed without proof") {
		t.Fatalf("previous: %d %s %s", prev.code, prev.stdout, prev.stderr)
	}
	var out promote.RollbackResult
	if err := json.Unmarshal([]byte(prev.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.To.Artifact.Digest != f.b || len(out.Unproven) != 1 || out.Unproven[0].Digest != c {
		t.Fatalf("previous picked %s, unproven %+v; want %s and one unproven %s", out.To.Artifact.Digest, out.Unproven, f.b, c)
	}
}

func readRecordAt(t *testing.T, top, rev string) *promotion.Record {
	t.Helper()
	rec, err := promotion.Parse("record", []byte(gittest.Run(t, top, "show", rev+":"+promotion.RecordPath("web", "production"))))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
