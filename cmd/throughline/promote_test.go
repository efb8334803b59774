package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promote"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

const (
	promNewDigest = "sha256:4b7e2a91c3d5f6081726354a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"
	promOldDigest = "sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"
)

// rawRender renders the overlay at p of the GitOps root root without
// policy: the objects and their rendered hash.
func rawRender(root, p string) ([]render.Object, string, error) {
	return gitops.WorkTree(root).Render(context.Background(), p)
}

// stagingAccepted writes the staging record of checkout: digest ACCEPTED
// in staging at desired (a commit of the fixture's history), with the
// notifier's evidence written now.
func stagingAccepted(t *testing.T, root, digest, desired string) {
	t.Helper()
	_, hash, err := rawRender(root, "apps/checkout/overlays/staging")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("checkout", 1,
		promotion.Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + digest, Digest: digest, SourceCommit: strings.Repeat("1", 40)},
		promotion.Target{Environment: "staging", Path: "apps/checkout/overlays/staging", Cluster: "staging", RenderedHash: hash, BaseRenderedHash: hash, Renderer: buildVersion()},
		t0, "test")
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40), RenderedHash: "sha256:" + strings.Repeat("3", 64), RuntimeEvidence: "evidence/dev/checkout/1.json"}, t0, "test"),
		rec.Approve("alice", rec.InputFor(buildVersion()), t0.Add(time.Hour*48), t0),
		rec.Reconcile(desired, t0, "test"),
		rec.Accept(desired, "evidence/staging/checkout/"+rec.PromotionID+".json", t0, "test"),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The notifier's evidence, committed with the record (its own encoding):
	// every runtime check staging's overlay declares Passed after its soak.
	at := time.Now().UTC().Truncate(time.Second)
	checksData, err := os.ReadFile(filepath.Join(root, "apps/checkout/overlays/staging", checkfile.File))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := checkfile.Parse(checkfile.File, checksData, checkfile.Options{AnyNamespace: true})
	if err != nil {
		t.Fatal(err)
	}
	checks := evidence.Checks(rc, nil)
	for i := range checks {
		checks[i].Verdict, checks[i].Value, checks[i].EvaluatedAt = string(v1alpha1.CheckPassed), "0.001", &at
	}
	soakStarted := at.Add(-rc.Soak.Duration - time.Minute)
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: "checkout", Environment: "staging", PromotionID: rec.PromotionID,
		Decision: promotion.Accepted, Image: rec.Artifact.Image, ArtifactDigest: digest, DesiredRevision: desired,
		ObservedRevision: desired, RenderedHash: hash, DesiredRenderedHash: hash, Time: at, VerifiedAt: &at, Checks: checks,
		SoakStartedAt: &soakStarted, Soak: rc.Soak.Duration.String(),
		Pods: []evidence.Pod{{Workload: "Deployment/checkout-staging/checkout", Container: "checkout", Pod: "checkout-1", Pods: 1,
			Declared: digest, ImageID: "ghcr.io/throughline-dev/checkout@" + digest, Outcome: "Verified", Match: "Exact"}},
		ReportedBy: evidence.Reporter{Source: "argocd"}}
	evJSON, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"promotion/checkout/staging.yaml": string(data), evidence.Path("staging", "checkout", rec.PromotionID): string(evJSON)}
	signEvidence(t, root, files)
	writeTree(t, root, files)
}

// promoteFixture is the example environment in a Git repository (the
// GitOps root in a subdirectory, as in this repository) where staging runs
// and accepted a new digest that production does not run yet.
func promoteFixture(t *testing.T) (top, root string) {
	t.Helper()
	top = t.TempDir()
	root = filepath.Join(top, "gitops")
	if err := os.Rename(copyTree(t, exampleRepo), root); err != nil {
		t.Fatal(err)
	}
	testenv.RemoveTrust(t, root) // made-up digests, no evidence: the trust gates are trust_gates_test.go's
	k := filepath.Join(root, "apps/checkout/overlays/staging/kustomization.yaml")
	writeTree(t, root, map[string]string{"apps/checkout/overlays/staging/kustomization.yaml": strings.Replace(readFile(t, k), "1.4.2@"+promOldDigest, "1.5.0@"+promNewDigest, 1)})
	unsignedApprovals(t, root) // signed approvals: approve_test.go
	gittest.Run(t, top, "init", "-q", "-b", "main")
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "staging desires 1.5.0")
	stagingAccepted(t, root, promNewDigest, gittest.Run(t, top, "rev-parse", "HEAD"))
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "staging accepted 1.5.0")
	return top, root
}

// TestProposeRefusesHandWrittenEvidence: the sequence on a copy of
// the example. Staging's record and evidence written by hand (no notifier
// signature), or a policy edited to list no notifier key, carry nothing to
// production: propose exits 3 naming the evidence file, and writes nothing.
func TestProposeRefusesHandWrittenEvidence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attack func(t *testing.T, top, root string)
		reason string
	}{
		{"the evidence without its signature", func(t *testing.T, top, root string) {
			gittest.Run(t, top, "rm", "-q", filepath.Join(root, evidence.SignaturePath(stagingEvidence(t, root))))
		}, "no signature file"},
		{"a policy that lists no notifier key", func(t *testing.T, top, root string) {
			pol := readFile(t, filepath.Join(root, promotion.PolicyFile))
			writeTree(t, root, map[string]string{promotion.PolicyFile: strings.Replace(pol, sshkey.PolicyLine, "", 1)})
		}, "the policy lists no evidenceSigners"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, root := promoteFixture(t)
			tc.attack(t, top, root)
			gittest.Run(t, top, "commit", "-q", "-a", "-m", tc.name)
			before := gittest.Run(t, top, "for-each-ref")
			r := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production")
			file := stagingEvidence(t, root)
			// The CLI prints a refusal without its rule's name; the one of
			// rule evidence-signature (ledger.ReadEvidence) names the file and
			// the commit it was read at ("<file>: at <commit>: <problem>"), and
			// promote/evidence_test.go (TestEvidenceSignatureRefusals) asserts the
			// rule itself.
			if want := "refused: " + file + ": at "; r.code != exitcode.Refused || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, tc.reason) {
				t.Fatalf("propose: exit %d, want %d naming %s (%s):\n%s%s", r.code, exitcode.Refused, file, tc.reason, r.stdout, r.stderr)
			}
			if after := gittest.Run(t, top, "for-each-ref"); after != before {
				t.Fatalf("a refused propose wrote to Git:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// stagingEvidence is the evidence file of staging's record in root.
func stagingEvidence(t *testing.T, root string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(root, "evidence/staging/checkout/checkout-staging-"+strings.TrimPrefix(promNewDigest, "sha256:")[:12]+"-*.json"))
	if err != nil || len(m) != 1 {
		t.Fatalf("staging's evidence: %v %v", m, err)
	}
	rel, err := filepath.Rel(root, m[0])
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestPromoteFlow: propose writes only the digest on a branch, a second
// propose returns the same attempt, check refuses until VERIFIED and
// APPROVED, then passes.
func TestPromoteFlow(t *testing.T) {
	top, root := promoteFixture(t)
	mainBefore := gittest.Run(t, top, "rev-parse", "main")
	res := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production", "-o", "json")
	if res.code != 0 {
		t.Fatalf("propose: %d %s %s", res.code, res.stdout, res.stderr)
	}
	var p promote.Proposal
	if err := json.Unmarshal([]byte(res.stdout), &p); err != nil {
		t.Fatal(err)
	}
	if p.Existing || p.Record.State != promotion.Candidate || p.Branch != "throughline/promote/checkout/production/4b7e2a91c3d5-1" {
		t.Fatalf("proposal %+v", p)
	}
	if gittest.Run(t, top, "rev-parse", "main") != mainBefore || gittest.Run(t, top, "status", "--porcelain") != "" {
		t.Fatal("propose changed main or the work tree")
	}
	// Only the digest and the record changed; replicas, hosts, resources stay.
	files := gittest.Run(t, top, "diff", "--name-only", "main", p.Branch)
	if files != "gitops/apps/checkout/overlays/production/kustomization.yaml\ngitops/promotion/checkout/production.yaml" {
		t.Fatalf("files changed: %q", files)
	}
	diff := gittest.Run(t, top, "diff", "-U0", "main", p.Branch, "--", "gitops/apps")
	if !strings.Contains(diff, `-    newTag: "1.4.2@`+promOldDigest) || !strings.Contains(diff, `+    newTag: "1.5.0@`+promNewDigest) || strings.Count(diff, "\n+") != 2 || strings.Count(diff, "\n-") != 2 {
		t.Fatalf("overlay diff:\n%s", diff)
	}
	classes := map[promotion.Class]int{}
	for _, c := range p.Changes {
		classes[c.Class]++
	}
	if classes[promotion.ClassArtifact] != 3 || len(classes) != 1 {
		t.Fatalf("classified changes %v", p.Changes)
	}
	// The same request again: the same attempt, no second branch.
	again := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production")
	if again.code != 0 || !strings.Contains(again.stdout, "existing attempt checkout-production-4b7e2a91c3d5-1") {
		t.Fatalf("second propose: %d %s %s", again.code, again.stdout, again.stderr)
	}
	if n := strings.Count(gittest.Run(t, top, "branch", "--list", "throughline/*"), "\n") + 1; n != 1 {
		t.Fatalf("%d branches after two proposes", n)
	}

	// The PR job refuses a CANDIDATE.
	chk := runCLI(t, "promote", "check", "--repo", root, "--base", "main", "--head", p.Branch)
	if chk.code != 3 || !strings.Contains(chk.stdout, "no staging evidence") || !strings.Contains(chk.stdout, "not approved") {
		t.Fatalf("check of a candidate: %d\n%s\n%s", chk.code, chk.stdout, chk.stderr)
	}
	// The decision is logged once, with the record's ids.
	logged := runCLI(t, "--log-format", "json", "promote", "check", "--repo", root, "--base", "main", "--head", p.Branch)
	var decisions []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logged.stderr), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["message"] == "gate decision" {
			decisions = append(decisions, m)
		}
	}
	if len(decisions) != 1 || decisions[0]["promotionId"] != p.Record.PromotionID || decisions[0]["app"] != "checkout" ||
		decisions[0]["environment"] != "production" || decisions[0]["digest"] != promNewDigest || decisions[0]["ok"] != false ||
		!slices.Contains(decisions[0]["rules"].([]any), any("not-approved")) {
		t.Fatalf("gate decisions logged: %v\n%s", decisions, logged.stderr)
	}
	// Approval before verification is a skipped state.
	if r := runCLI(t, "promote", "approve", "--repo", root, "--app", "checkout", "--to", "production", "--approver", "alice", "--expires", "2h"); r.code != 3 {
		t.Fatalf("approve a candidate: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// --evidence FILE is gone; a source that accepted nothing is refused.
	if r := runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "production", "--evidence", "e.yaml"); r.code != 2 ||
		!strings.Contains(r.stderr, "reads the source environment's evidence/v1 from Git") {
		t.Fatalf("verify --evidence: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "production", "--from", "dev"); r.code != 3 ||
		!strings.Contains(r.stderr, "no runtime evidence of "+promNewDigest+" in dev") {
		t.Fatalf("verify from dev: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "production"); r.code != 0 ||
		!strings.Contains(r.stdout, "evidence evidence/staging/checkout/checkout-staging-4b7e2a91c3d5-1.json at ") {
		t.Fatalf("verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "promote", "approve", "--repo", root, "--app", "checkout", "--to", "production", "--approver", "alice", "--expires", "2h"); r.code != 0 {
		t.Fatalf("approve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	chk = runCLI(t, "promote", "check", "--repo", root, "--base", "main", "--head", p.Branch, "-o", "json")
	if chk.code != 0 {
		t.Fatalf("check of an approved promotion: %d\n%s\n%s", chk.code, chk.stdout, chk.stderr)
	}
	var rep gate.PromotionReport
	if err := json.Unmarshal([]byte(chk.stdout), &rep); err != nil || !rep.OK || rep.State != promotion.Approved || rep.Classes["artifact"] != 3 {
		t.Fatalf("report %+v %v", rep, err)
	}
	st := runCLI(t, "promote", "status", "--repo", root)
	if st.code != 0 || !strings.Contains(st.stdout, "APPROVED") || !strings.Contains(st.stdout, "ACCEPTED") {
		t.Fatalf("status: %d %s %s", st.code, st.stdout, st.stderr)
	}
	stj := runCLI(t, "promote", "status", "--repo", root, "-o", "json")
	var rows []ledger.StatusRow
	if err := json.Unmarshal([]byte(stj.stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("status json %s: %v", stj.stdout, err)
	}

	// An expired approval, and a target that moved on, void the approval.
	ctx := context.Background()
	r, err := gitops.Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	late, err := gate.CheckPromotion(ctx, r, gate.Request{Base: "main", Head: p.Branch, Now: time.Now().Add(3 * time.Hour), Renderer: buildVersion()})
	if err != nil || late.OK || !strings.Contains(strings.Join(late.Refusals, "\n"), "expired") {
		t.Fatalf("expired approval: %+v %v", late, err)
	}
	// A new commit on main that changes production's render: moved on.
	env := filepath.Join(root, "apps/checkout/overlays/production/environment.yaml")
	writeTree(t, root, map[string]string{"apps/checkout/overlays/production/environment.yaml": strings.Replace(readFile(t, env), "value: production", "value: production-eu", 1)})
	gittest.Run(t, top, "commit", "-q", "-am", "production parameter")
	gittest.Run(t, top, "merge", "-q", "--no-edit", p.Branch)
	moved, err := gate.CheckPromotion(ctx, r, gate.Request{Base: "main~1", Head: p.Branch, Now: time.Now(), Renderer: buildVersion()})
	if err != nil {
		t.Fatal(err)
	}
	if moved.OK || !strings.Contains(strings.Join(moved.Refusals, "\n"), "moved on") {
		t.Fatalf("moved on: %+v", moved.Refusals)
	}
}

// proposeBranch runs propose and returns the branch.
func proposeBranch(t *testing.T, root string) string {
	t.Helper()
	res := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production", "-o", "json")
	if res.code != 0 {
		t.Fatalf("propose: %d %s %s", res.code, res.stdout, res.stderr)
	}
	var p promote.Proposal
	if err := json.Unmarshal([]byte(res.stdout), &p); err != nil {
		t.Fatal(err)
	}
	return p.Branch
}

// amendBranch adds a commit on branch made by change (files relative to
// the GitOps root) and checks main out again.
func amendBranch(t *testing.T, top, branch string, change func()) {
	t.Helper()
	gittest.Run(t, top, "checkout", "-q", branch)
	change()
	gittest.Run(t, top, "add", "-A")
	gittest.Run(t, top, "commit", "-q", "-m", "edit")
	gittest.Run(t, top, "checkout", "-q", "main")
}

// TestPromoteCheckNegative: the seeds' negative experiments and the bad PRs.
func TestPromoteCheckNegative(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string)
		want   []string
		code   int
	}{
		{"staging copied over production", func(t *testing.T, root string) {
			for _, f := range []string{"kustomization.yaml", "environment.yaml"} {
				writeTree(t, root, map[string]string{"apps/checkout/overlays/production/" + f: readFile(t, filepath.Join(root, "apps/checkout/overlays/staging", f))})
			}
		}, []string{"boundary fields crossed", "metadata.namespace: checkout-production -> checkout-staging", "environment.yaml changed", "namespace changed", "cross-environment object"}, 3},
		{"production overlay with a tag", func(t *testing.T, root string) {
			k := filepath.Join(root, "apps/checkout/overlays/production/kustomization.yaml")
			writeTree(t, root, map[string]string{"apps/checkout/overlays/production/kustomization.yaml": strings.Replace(readFile(t, k), "1.5.0@"+promNewDigest, "1.5.0", 1)})
		}, []string{"unpinned-image", "1.5.0"}, 3},
		{"digest not the verified one", func(t *testing.T, root string) {
			k := filepath.Join(root, "apps/checkout/overlays/production/kustomization.yaml")
			other := "sha256:" + strings.Repeat("7", 64)
			writeTree(t, root, map[string]string{"apps/checkout/overlays/production/kustomization.yaml": strings.Replace(readFile(t, k), promNewDigest, other, 1)})
		}, []string{"digest not the verified one " + promNewDigest, "is not the one proposed and approved"}, 3},
		{"moved tag", func(t *testing.T, root string) {
			rec := func(d string, at string) string {
				return `{"apiVersion":"throughline.dev/v1alpha1","kind":"TagResolution","reference":"ghcr.io/throughline-dev/checkout:1.5.0","repository":"ghcr.io/throughline-dev/checkout","tag":"1.5.0","registry":"ghcr.io","digest":"` + d + `","resolvedAt":"` + at + `"}`
			}
			writeTree(t, root, map[string]string{"drift/staging.json": rec(promNewDigest, "2026-11-01T00:00:00Z"), "drift/production.json": rec(promOldDigest, "2026-11-02T00:00:00Z")})
		}, []string{"moved tag", "drift/production.json"}, 3},
		{"PR also edits base", func(t *testing.T, root string) {
			d := filepath.Join(root, "apps/checkout/base/deployment.yaml")
			writeTree(t, root, map[string]string{"apps/checkout/base/deployment.yaml": strings.Replace(readFile(t, d), "replicas: 1", "replicas: 3", 1)})
		}, []string{"gitops/apps/checkout/base/deployment.yaml changed"}, 3},
		{"PR also edits another environment", func(t *testing.T, root string) {
			k := filepath.Join(root, "apps/checkout/overlays/staging/kustomization.yaml")
			writeTree(t, root, map[string]string{"apps/checkout/overlays/staging/kustomization.yaml": strings.Replace(readFile(t, k), "count: 2", "count: 3", 1)})
		}, []string{"gitops/apps/checkout/overlays/staging/kustomization.yaml changed"}, 3},
		{"replicas changed without policy", func(t *testing.T, root string) {
			k := filepath.Join(root, "apps/checkout/overlays/production/kustomization.yaml")
			writeTree(t, root, map[string]string{"apps/checkout/overlays/production/kustomization.yaml": strings.Replace(readFile(t, k), "count: 6", "count: 8", 1)})
		}, []string{"replicas changed", "capacity: Deployment.apps checkout-production/checkout spec.replicas: 6 -> 8"}, 3},
		{"two records in one change", func(t *testing.T, root string) {
			f := filepath.Join(root, "promotion/checkout/staging.yaml")
			writeTree(t, root, map[string]string{"promotion/checkout/staging.yaml": readFile(t, f) + "# edited\n"})
		}, []string{"exactly one promotion record", "promotion/checkout/staging.yaml"}, 3},
		{"hand-edited record with an illegal jump", func(t *testing.T, root string) {
			f := filepath.Join(root, "promotion/checkout/production.yaml")
			writeTree(t, root, map[string]string{"promotion/checkout/production.yaml": strings.Replace(readFile(t, f), "\nstate: CANDIDATE\n", "\nstate: APPROVED\n", 1)})
		}, []string{"promotion/checkout/production.yaml"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, root := promoteFixture(t)
			branch := proposeBranch(t, root)
			amendBranch(t, top, branch, func() { tc.change(t, root) })
			res := runCLI(t, "promote", "check", "--repo", root, "--base", "main", "--head", branch)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", res.code, tc.code, res.stdout, res.stderr)
			}
			if out := res.stdout + res.stderr; strings.Contains(out, "promotion :") || strings.Contains(out, "(state )") ||
				strings.Contains(out, "promotion  refused") {
				t.Errorf("the report prints empty fields:\n%s\n%s", res.stdout, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stdout+res.stderr, w) {
					t.Errorf("output does not contain %q:\n%s\n%s", w, res.stdout, res.stderr)
				}
			}
		})
	}
}

// TestPromoteProposeRefusals: nothing ACCEPTED in the source, bad usage.
func TestPromoteProposeRefusals(t *testing.T) {
	top, root := promoteFixture(t)
	if r := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "dev", "--to", "production"); r.code != 3 || !strings.Contains(r.stderr, "nothing is verified in dev") {
		t.Fatalf("no source record: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--to", "production"); r.code != 2 {
		t.Fatalf("missing --from: %d", r.code)
	}
	// Issue 14 item 1: the environment is derived from the path and must be
	// one the registry lists.
	for _, args := range [][]string{
		{"--from", "staging", "--to", "qa", "--path", "apps/checkout/overlays/production"},
		{"--from", "dev", "--to", "staging", "--path", "apps/checkout/overlays/production"},
		{"--from", "staging", "--to", "production", "--cluster", "staging-eu-1"},
	} {
		r := runCLI(t, append([]string{"promote", "propose", "--repo", root, "--app", "checkout"}, args...)...)
		if r.code != 3 || !strings.Contains(r.stderr, "throughline-policy.yaml") || !strings.Contains(r.stderr, "environment") {
			t.Errorf("propose %v: %d %s", args, r.code, r.stderr)
		}
	}
	if out := gittest.Run(t, top, "branch", "--list", "throughline/*"); out != "" {
		t.Fatalf("refused proposals left branches: %s", out)
	}
	// A future schemaVersion in the source record is invalid input.
	f := filepath.Join(root, "promotion/checkout/staging.yaml")
	writeTree(t, root, map[string]string{"promotion/checkout/staging.yaml": strings.Replace(readFile(t, f), "promotion/v1", "promotion/v2", 1)})
	gittest.Run(t, top, "commit", "-q", "-am", "v2")
	if r := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production"); r.code != 4 || !strings.Contains(r.stderr, "unsupported schemaVersion") {
		t.Fatalf("future schemaVersion: %d %s", r.code, r.stderr)
	}
}

// TestExampleStagingRecord: the example record's target hash is the example
// staging overlay's rendered hash.
func TestExampleStagingRecord(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(exampleRepo, "promotion/checkout/staging.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := promotion.Parse("promotion/checkout/staging.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	_, hash, err := rawRender(exampleRepo, rec.Target.Path)
	if err != nil {
		t.Fatal(err)
	}
	if hash != rec.Target.RenderedHash {
		t.Fatalf("example record target.renderedHash %s, staging renders %s", rec.Target.RenderedHash, hash)
	}
}

// TestPromoteProposeOpensPullRequest: with --forge, propose opens one PR
// whose body is the classified diff; the same request again opens none.
func TestPromoteProposeOpensPullRequest(t *testing.T) {
	_, root := promoteFixture(t)
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		bodies = append(bodies, b)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"number":7,"html_url":"https://github.example/pr/7"}`)
	}))
	defer srv.Close()
	t.Setenv("THROUGHLINE_FORGE_TOKEN", "tok")
	args := []string{"promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production",
		"--forge", "github", "--forge-url", srv.URL, "--forge-repo", "platform/gitops-env"}
	r := runCLI(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "pull request https://github.example/pr/7") {
		t.Fatalf("propose: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if len(bodies) != 1 || bodies[0]["head"] != "throughline/promote/checkout/production/4b7e2a91c3d5-1" || bodies[0]["base"] != "main" ||
		!strings.Contains(bodies[0]["body"].(string), "| artifact | Deployment.apps checkout-production/checkout | spec.template.spec.containers[0].image |") {
		t.Fatalf("pull request %v", bodies)
	}
	if r := runCLI(t, args...); r.code != 0 || len(bodies) != 1 {
		t.Fatalf("second propose: %d, %d pull requests", r.code, len(bodies))
	}
}

// TestPromoteNewAttempt: a changed target parameter or cluster makes a new
// attempt (a new branch, the earlier approval not carried over); the same
// request again returns the existing one.
func TestPromoteNewAttempt(t *testing.T) {
	top, root := promoteFixture(t)
	first := proposeBranch(t, root)
	if r := runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "production"); r.code != 0 {
		t.Fatalf("verify: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, "promote", "approve", "--repo", root, "--app", "checkout", "--to", "production", "--approver", "alice", "--expires", "2h"); r.code != 0 {
		t.Fatalf("approve: %d %s", r.code, r.stderr)
	}
	// Production's parameters change on main: the target moved on.
	env := filepath.Join(root, "apps/checkout/overlays/production/environment.yaml")
	writeTree(t, root, map[string]string{"apps/checkout/overlays/production/environment.yaml": strings.Replace(readFile(t, env), "cpu: 1,", "cpu: 2,", 1)})
	gittest.Run(t, top, "commit", "-q", "-am", "production needs more cpu")
	firstTip := gittest.Run(t, top, "rev-parse", first)
	second := proposeBranch(t, root)
	// Attempt 2 supersedes attempt 1: its branch is deleted.
	if left := gittest.Run(t, top, "branch", "--list", first); left != "" {
		t.Fatalf("the superseded attempt's branch %s is left", first)
	}
	if second == first || !strings.HasSuffix(second, "-2") {
		t.Fatalf("after a target change: branch %s (first %s), want attempt 2", second, first)
	}
	data := gittest.Run(t, top, "show", second+":gitops/promotion/checkout/production.yaml")
	rec, err := promotion.Parse("production.yaml", []byte(data))
	if err != nil || rec.State != promotion.Candidate || rec.Approval != nil || rec.Attempt != 2 {
		t.Fatalf("attempt 2: %+v %v", rec, err)
	}
	// The old attempt's approval does not pass the gate against the new main.
	r, err := gitops.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := gate.CheckPromotion(context.Background(), r, gate.Request{Base: "main", Head: firstTip, Now: time.Now(), Renderer: buildVersion()})
	if err != nil || rep.OK {
		t.Fatalf("old attempt against the moved target: %+v %v", rep, err)
	}
	// A free-text cluster is refused; another cluster in the registry is
	// another attempt.
	res := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production", "--cluster", "prod-us-1")
	if res.code != 3 || !strings.Contains(res.stderr, `cluster "prod-us-1" is not environment production's`) {
		t.Fatalf("free-text cluster: %d %s %s", res.code, res.stdout, res.stderr)
	}
	pol := filepath.Join(root, "throughline-policy.yaml")
	writeTree(t, root, map[string]string{"throughline-policy.yaml": strings.Replace(readFile(t, pol), "prod-eu-1", "prod-us-1", 1)})
	gittest.Run(t, top, "commit", "-q", "-am", "production moves to prod-us-1")
	res = runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production")
	if res.code != 0 || !strings.Contains(res.stdout, "proposed checkout-production-4b7e2a91c3d5-3") ||
		!strings.Contains(res.stdout, "supersedes checkout-production-4b7e2a91c3d5-2: branch "+second+" deleted") {
		t.Fatalf("other cluster: %d %s %s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production", "--cluster", "prod-us-1")
	if res.code != 0 || !strings.Contains(res.stdout, "existing attempt checkout-production-4b7e2a91c3d5-3") {
		t.Fatalf("same request again: %d %s %s", res.code, res.stdout, res.stderr)
	}
	// The superseded attempts are closed: verify picks the only open one.
	if r := runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "production"); r.code != 0 ||
		!strings.Contains(r.stdout, "VERIFIED checkout-production-4b7e2a91c3d5-3") {
		t.Fatalf("verify after the superseded attempts closed: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestPromoteReconcile: after the promotion PR is merged, the post-merge job
// records RECONCILING with the merged commit as the desired revision; before
// the merge, and a second time, it is refused.
func TestPromoteReconcile(t *testing.T) {
	top, root := promoteFixture(t)
	res := runCLI(t, "promote", "propose", "--repo", root, "--app", "checkout", "--from", "staging", "--to", "production", "-o", "json")
	if res.code != 0 {
		t.Fatalf("propose: %d %s %s", res.code, res.stdout, res.stderr)
	}
	var p promote.Proposal
	if err := json.Unmarshal([]byte(res.stdout), &p); err != nil {
		t.Fatal(err)
	}
	reconcile := func() result {
		return runCLI(t, "promote", "reconcile", "--repo", root, "--app", "checkout", "--to", "production")
	}
	if r := runCLI(t, "promote", "verify", "--repo", root, "--app", "checkout", "--to", "production"); r.code != 0 {
		t.Fatalf("verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := reconcile(); r.code != 3 || !strings.Contains(r.stderr, "merge the promotion PR first") {
		t.Fatalf("reconcile before the merge: %d %s %s", r.code, r.stdout, r.stderr)
	}
	gittest.Run(t, top, "merge", "-q", "--no-ff", "--no-edit", p.Branch)
	if r := reconcile(); r.code != 3 || !strings.Contains(r.stderr, "no approval") {
		t.Fatalf("reconcile of a merged but unapproved record: %d %s %s", r.code, r.stdout, r.stderr)
	}
	gittest.Run(t, top, "reset", "-q", "--hard", "HEAD~1")
	if r := runCLI(t, "promote", "approve", "--repo", root, "--app", "checkout", "--to", "production", "--approver", "alice", "--expires", "2h"); r.code != 0 {
		t.Fatalf("approve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	gittest.Run(t, top, "merge", "-q", "--no-ff", "--no-edit", p.Branch)
	merged := gittest.Run(t, top, "rev-parse", "main")
	r := reconcile()
	if r.code != 0 || !strings.Contains(r.stdout, "RECONCILING "+p.Record.PromotionID+" desired "+merged) {
		t.Fatalf("reconcile: %d %s %s", r.code, r.stdout, r.stderr)
	}
	data := gittest.Run(t, top, "show", "main:gitops/promotion/checkout/production.yaml")
	rec, err := promotion.Parse("production.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != promotion.Reconciling || rec.Reconciling.DesiredRevision != merged {
		t.Fatalf("record after reconcile: %s %+v", rec.State, rec.Reconciling)
	}
	if again := reconcile(); again.code != 3 {
		t.Fatalf("second reconcile: %d %s %s", again.code, again.stdout, again.stderr)
	}
}

// TestPromoteRejectClosesPullRequest: reject --forge closes the finished
// attempt's open pull request (and only that branch's).
func TestPromoteRejectClosesPullRequest(t *testing.T) {
	_, root := promoteFixture(t)
	branch := proposeBranch(t, root)
	var closed []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			_, _ = io.WriteString(w, `[{"number":7,"head":{"ref":"`+branch+`"}}]`)
		case http.MethodPatch:
			closed = append(closed, r.URL.Path)
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	defer srv.Close()
	t.Setenv("THROUGHLINE_FORGE_TOKEN", "tok")
	r := runCLI(t, "promote", "reject", "--repo", root, "--app", "checkout", "--to", "production", "--reason", "not this week",
		"--forge", "github", "--forge-url", srv.URL, "--forge-repo", "platform/gitops-env")
	if r.code != 0 || !strings.Contains(r.stdout, "closed pull request #7") || len(closed) != 1 || closed[0] != "/repos/platform/gitops-env/pulls/7" {
		t.Fatalf("reject: %d %s %s, closed %v", r.code, r.stdout, r.stderr, closed)
	}
}

// TestStatusShowsClosedEnvironments: promote status says, below its table,
// which environment takes no promotion now and when it opens next.
func TestStatusShowsClosedEnvironments(t *testing.T) {
	top, root := promoteFixture(t)
	from, until := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	pol := filepath.Join(root, promotion.PolicyFile)
	writeTree(t, root, map[string]string{promotion.PolicyFile: strings.Replace(readFile(t, pol), "  production:\n",
		"  production:\n    freezes:\n      - {name: year-end, from: \""+from+"\", until: \""+until+"\"}\n", 1)})
	gittest.Run(t, top, "commit", "-q", "-am", "production frozen")
	r := runCLI(t, "promote", "status", "--repo", root)
	want := "closed: production (frozen, environments.production.freezes[0]): production does not accept promotions at "
	if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "it opens next at "+until) || strings.Contains(r.stdout, "closed: staging") {
		t.Fatalf("status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
