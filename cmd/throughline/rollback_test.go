package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/promotion"
)

// rollbackFixture is a Git repository whose production record was ACCEPTED
// for digest a, then for digest b (b is desired now). Both images are in an
// in-process registry at reg.
type rollbackFixture struct {
	top, reg, a, b string
}

const rbOverlay = "apps/web/overlays/production"

func rbKustomization(reg, tag, digest string) string {
	return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: web-production\nresources:\n  - ../../base\nimages:\n  # the artifact\n  - name: " +
		reg + "/web\n    newTag: \"" + tag + "@" + digest + "\"\n"
}

func rbDeployment(reg, annotations string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n" + annotations + "spec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: " + reg + "/web:1.0.0\n"
}

// rbAccept writes the overlay with digest and an ACCEPTED record for it,
// and commits both.
func rbAccept(t *testing.T, top, reg, tag, digest string, attempt int) {
	t.Helper()
	writeTree(t, top, map[string]string{rbOverlay + "/kustomization.yaml": rbKustomization(reg, tag, digest)})
	_, hash, err := promoteRawRender(context.Background(), top, rbOverlay)
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
	rev := strings.Repeat("a", 40)
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
	writeTree(t, top, map[string]string{promotion.RecordPath("web", "production"): string(data)})
	gitT(t, top, "add", ".")
	gitT(t, top, "commit", "-q", "-m", "accepted "+tag)
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
	gitT(t, f.top, "init", "-q", "-b", "main")
	rbAccept(t, f.top, reg, "1.0.0", f.a, 1)
	rbAccept(t, f.top, reg, "1.1.0", f.b, 1)
	return f
}

func TestRollbackPrevious(t *testing.T) {
	f := newRollbackFixture(t, "")
	mainBefore := gitT(t, f.top, "rev-parse", "main")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous", "-o", "json")
	if res.code != exitOK {
		t.Fatalf("rollback: %d %s %s", res.code, res.stdout, res.stderr)
	}
	var out rollbackResult
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	// attempt 1 of digest a was accepted before: the rollback is attempt 2.
	wantBranch := "throughline/promote/web/production/" + strings.TrimPrefix(f.a, "sha256:")[:12] + "-2"
	if out.Proposal.Branch != wantBranch || out.Proposal.Record.State != promotion.Candidate || out.Proposal.Record.Artifact.Digest != f.a || out.From != f.b {
		t.Fatalf("result %+v", out)
	}
	// History is untouched: main did not move, the branch descends from it.
	if gitT(t, f.top, "rev-parse", "main") != mainBefore || gitT(t, f.top, "status", "--porcelain") != "" {
		t.Fatal("rollback changed main or the work tree")
	}
	gitT(t, f.top, "merge-base", "--is-ancestor", mainBefore, out.Proposal.Branch)
	k := gitT(t, f.top, "show", out.Proposal.Branch+":"+rbOverlay+"/kustomization.yaml")
	if k != strings.TrimSpace(rbKustomization(f.reg, "1.0.0", f.a)) {
		t.Fatalf("overlay on the branch:\n%s", k)
	}
	if files := gitT(t, f.top, "diff", "--name-only", mainBefore, out.Proposal.Branch); files != "apps/web/overlays/production/kustomization.yaml\npromotion/web/production.yaml" {
		t.Fatalf("changed files: %s", files)
	}
	if msg := gitT(t, f.top, "log", "-1", "--format=%B", out.Proposal.Branch); !strings.Contains(msg, "Rollback-From: "+f.b) || !strings.Contains(msg, "Rollback-To: "+f.a) {
		t.Fatalf("commit message: %s", msg)
	}
	// The same request again is the existing attempt.
	again := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", f.a, "-o", "json")
	if again.code != exitOK || !strings.Contains(again.stdout, `"existing": true`) {
		t.Fatalf("again: %d %s %s", again.code, again.stdout, again.stderr)
	}
}

func TestRollbackNeverAccepted(t *testing.T) {
	f := newRollbackFixture(t, "")
	other := pushRandomImage(t, f.reg+"/web:2.0.0")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", other)
	if res.code != exitRefused || !strings.Contains(res.stderr, "never ACCEPTED in production") {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
	cur := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", f.b)
	if cur.code != exitRefused || !strings.Contains(cur.stderr, "already the desired digest") {
		t.Fatalf("want refusal of the current digest: %d %s", cur.code, cur.stderr)
	}
	if b := gitT(t, f.top, "branch", "--list", "throughline/*"); b != "" {
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
	if res.code != exitRefused || !strings.Contains(res.stderr, "no longer exists in the registry") {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
}

func TestRollbackIrreversibleMigration(t *testing.T) {
	f := newRollbackFixture(t, "  annotations:\n    throughline.dev/irreversible-migration: \"true\"\n")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous")
	if res.code != exitRefused || !strings.Contains(res.stderr, "--accept-irreversible-migration") || !strings.Contains(res.stderr, "Deployment.apps web-production/web") {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
	ok := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous", "--accept-irreversible-migration")
	if ok.code != exitOK || !strings.Contains(ok.stderr, "irreversible migration") {
		t.Fatalf("with the flag: %d %s %s", ok.code, ok.stdout, ok.stderr)
	}
}

func TestRollbackNoRecord(t *testing.T) {
	top := t.TempDir()
	writeTree(t, top, map[string]string{"README": "x\n"})
	gitT(t, top, "init", "-q", "-b", "main")
	gitT(t, top, "add", ".")
	gitT(t, top, "commit", "-q", "-m", "empty")
	res := runCLI(t, "rollback", "--repo", top, "--app", "web", "--env", "production", "--to", "previous")
	if res.code != exitRefused {
		t.Fatalf("want refusal: %d %s", res.code, res.stderr)
	}
}

// The old digest with today's overlay must still pass policy: a tag-only
// sidecar added since is refused.
func TestRollbackRefusedByPolicy(t *testing.T) {
	f := newRollbackFixture(t, "")
	dep := rbDeployment(f.reg, "") + "        - name: sidecar\n          image: " + f.reg + "/sidecar:latest\n"
	writeTree(t, f.top, map[string]string{"apps/web/base/deployment.yaml": dep})
	gitT(t, f.top, "commit", "-q", "-am", "sidecar by tag")
	res := runCLI(t, "rollback", "--repo", f.top, "--app", "web", "--env", "production", "--to", "previous")
	if res.code != exitRefused || !strings.Contains(res.stderr, "sidecar") {
		t.Fatalf("want policy refusal: %d %s", res.code, res.stderr)
	}
}
