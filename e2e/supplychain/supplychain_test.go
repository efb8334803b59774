//go:build e2e

package supplychain

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

var throughlineBin string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughlineBin) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// world is the registry, the Git server and the CI's keys of one test.
type world struct {
	t      *testing.T
	ctx    context.Context
	ci     *trusttest.World
	remote string
	cache  string
	// notifier signs the runtime evidence the test plays; the policy's
	// evidenceSigners lists it for every environment.
	notifier sshkey.Notifier
}

func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	return testenv.Git(w.t, w.ctx, testenv.GitEnv(dir), dir, args...)
}

// run runs the throughline binary in dir (HOME=dir: no registry
// credentials, anonymous pulls).
func (w *world) run(dir string, args ...string) testenv.CLIResult {
	w.t.Helper()
	r, err := testenv.RunCLI(w.ctx, throughlineBin, testenv.GitEnv(dir), args...)
	must(w.t, err)
	return r
}

// clone is a fresh clone of the GitOps repository.
func (w *world) clone() string {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "clone")
	w.git(filepath.Dir(dir), "clone", "-q", w.remote, dir)
	return dir
}

// newWorld starts the registry and the Git server and pushes the example
// (its artifact in the registry, its trust policies as shipped: staging
// takes scans up to 168h old, production 24h; the CI key the test signs
// with; production's approvals unsigned: signed approvals are
// e2e/promotion's subject) to main.
func newWorld(t *testing.T) *world {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	srv := testenv.StartGitServer(t, testenv.GitServerOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	w := &world{t: t, ctx: ctx, ci: trusttest.New(t, false), cache: t.TempDir(), notifier: sshkey.NewNotifier(t, "dev", "staging", "production")}
	w.ci.Host = reg.Host // the CI pushes to the real registry
	var err error
	w.remote, err = srv.CreateRepo(ctx, "platform/gitops-env.git")
	must(t, err)
	work := filepath.Join(t.TempDir(), "gitops-env")
	testenv.CopyExampleFor(t, work, reg.Host)
	pol := filepath.Join(work, promotion.PolicyFile)
	data, err := os.ReadFile(pol)
	must(t, err)
	var keep []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if s := strings.TrimSpace(l); !strings.HasPrefix(s, "approvers:") && !strings.HasPrefix(s, "minApprovals:") {
			keep = append(keep, l)
		}
	}
	must(t, os.WriteFile(pol, []byte(strings.Join(keep, "")+sshkey.PolicyLine), 0o644))
	must(t, os.MkdirAll(filepath.Join(work, filepath.Dir(sshkey.EvidenceSignersFile)), 0o755))
	must(t, os.WriteFile(filepath.Join(work, sshkey.EvidenceSignersFile), []byte(w.notifier.Line()), 0o644))
	must(t, os.WriteFile(filepath.Join(work, "keys", "ci.pub"), w.ci.Files["keys/ci.pub"], 0o644))
	w.git(work, "init", "-q", "-b", "main")
	w.git(work, "add", ".")
	w.git(work, "commit", "-q", "-m", "the example, its artifact in the test registry, the CI's key")
	w.git(work, "push", "-q", w.remote, "main")
	return w
}

// build is the "CI" step: it pushes a new image and attaches its
// signature and attestations, signed with the CI's key, the scan finished
// scanAge ago; it returns the image (repository:1.5.0@digest) and the scan.
func (w *world) build(scanAge time.Duration) (image string, scan []byte) {
	w.t.Helper()
	img := w.ci.Image("throughline-dev/checkout")
	e := w.ci.CIEvidence(img)
	e.Scan = w.ci.SignKey(w.ci.Key, trusttest.Scan(img, time.Now().Add(-scanAge), nil))
	w.ci.AttachTag(img, ".sig", e.Sig)
	w.ci.AttachTag(img, ".att", e.Prov, e.SBOM, e.Scan)
	return img.Context().String() + ":1.5.0@" + img.DigestStr(), e.Scan
}

// candidate is CI's entry point, promote candidate: image becomes a
// CANDIDATE of staging, its evidence verified against staging's trust
// policy and recorded by bundle digest on the attempt branch, which is
// merged (the candidacy's PR). It returns the evidence recorded.
func (w *world) candidate(image string) *promotion.SupplyChain {
	w.t.Helper()
	dir := w.clone()
	r := w.run(dir, "promote", "candidate", "--repo", dir, "--app", "checkout", "--to", "staging", "--image", image,
		"--source-commit", trusttest.SourceCommit, "--trust-cache-dir", w.cache, "-o", "json")
	if r.Code != 0 {
		w.t.Fatalf("arrow CI -> staging candidacy: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var p struct {
		Record promotion.Record `json:"record"`
		Branch string           `json:"branch"`
	}
	must(w.t, json.Unmarshal([]byte(r.Stdout), &p))
	sc := p.Record.Artifact.Evidence
	if p.Record.State != promotion.Candidate || sc == nil || sc.Candidacy != p.Record.PromotionID || len(sc.Items) != 4 {
		w.t.Fatalf("arrow CI -> staging candidacy: record %+v, evidence %+v", p.Record, sc)
	}
	w.git(dir, "merge", "-q", "--ff-only", "origin/"+p.Branch)
	w.git(dir, "push", "-q", "origin", "main")
	return sc
}

// acceptInStaging plays staging running image and accepting it: its
// ACCEPTED record (carrying the candidacy's evidence) and the notifier's
// evidence, pushed to main.
func (w *world) acceptInStaging(image string, sc *promotion.SupplyChain) {
	w.t.Helper()
	dir := w.clone()
	ref := digestRef(w.t, image)
	PlayAccepted(w.t, w.ctx, dir, Accepted{App: "checkout", Environment: "staging", Cluster: "staging-eu-1", Overlay: "apps/checkout/overlays/staging",
		Artifact: promotion.Artifact{Image: image, Digest: ref[strings.Index(ref, "@")+1:], SourceCommit: trusttest.SourceCommit, Evidence: sc},
		Bin:      throughlineBin, Env: testenv.GitEnv(dir), Notifier: w.notifier})
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "staging ACCEPTED "+image)
	w.git(dir, "push", "-q", "origin", "main")
}

func digestRef(t *testing.T, image string) string {
	d, err := name.NewDigest(image)
	must(t, err)
	return d.Context().String() + "@" + d.DigestStr()
}

// TestCandidateToProduction: an image with a fresh scan goes from CI to
// staging and on to production, every gate re-verifying the evidence
// recorded at candidacy; a second image whose scan is two days old is
// accepted by staging's policy (168h) and refused by production's (24h) at
// propose, naming the rule, the image and the scan's digest.
func TestCandidateToProduction(t *testing.T) {
	w := newWorld(t)
	image, _ := w.build(time.Hour)
	w.acceptInStaging(image, w.candidate(image))

	dir := w.clone()
	gate := func(arrow string, args ...string) {
		t.Helper()
		r := w.run(dir, append(args, "--repo", dir)...)
		if r.Code != 0 {
			t.Fatalf("arrow %s: exit %d\n%s\n%s", arrow, r.Code, r.Stdout, r.Stderr)
		}
	}
	gate("staging -> production propose", "promote", "propose", "--app", "checkout", "--from", "staging", "--to", "production",
		"--trust-cache-dir", w.cache)
	gate("staging -> production verify", "promote", "verify", "--app", "checkout", "--to", "production", "--trust-cache-dir", w.cache)
	gate("production approve", "promote", "approve", "--app", "checkout", "--to", "production", "--approver", "alice", "--expires", "1h")
	ref := digestRef(t, image)
	branch := promotion.AttemptKey{App: "checkout", Digest: ref[strings.Index(ref, "@")+1:], Environment: "production", Attempt: 1}.Branch()
	pr := w.clone()
	w.git(pr, "fetch", "-q", "origin", branch+":"+branch)
	r := w.run(pr, "promote", "check", "--repo", pr, "--base", "origin/main", "--head", branch, "--trust-cache-dir", w.cache)
	if r.Code != 0 {
		t.Fatalf("arrow production PR gate: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	rec, err := promotion.Parse("production.yaml", []byte(w.git(pr, "show", branch+":"+promotion.RecordPath("checkout", "production"))))
	must(t, err)
	staged, err := promotion.Parse("staging.yaml", []byte(w.git(pr, "show", "origin/main:"+promotion.RecordPath("checkout", "staging"))))
	must(t, err)
	if rec.Artifact.Evidence == nil || !rec.Artifact.Evidence.Equal(staged.Artifact.Evidence) || len(rec.Artifact.Evidence.Items) != 4 {
		t.Fatalf("arrow production record: evidence %+v, not staging's %+v", rec.Artifact.Evidence, staged.Artifact.Evidence)
	}

	// The next build's scan finished two days ago: staging takes it.
	old, scan := w.build(48 * time.Hour)
	w.acceptInStaging(old, w.candidate(old))
	dir = w.clone()
	r = w.run(dir, "promote", "propose", "--repo", dir, "--app", "checkout", "--from", "staging", "--to", "production", "--trust-cache-dir", w.cache)
	oldRef := digestRef(t, old)
	for _, want := range []string{trust.RuleScanTooOld, oldRef, "evidence " + trusttest.DigestOf(scan)} {
		if r.Code != 3 || !strings.Contains(r.Stderr, want) {
			t.Fatalf("arrow staging -> production propose of a scan too old for production: exit %d, want 3 naming %q:\n%s", r.Code, want, r.Stderr)
		}
	}
	if heads := w.git(dir, "ls-remote", "--heads", "origin"); strings.Count(heads, "refs/heads/throughline/promote/checkout/production/") != 1 {
		t.Fatalf("a refused propose left a branch:\n%s", heads)
	}
}
