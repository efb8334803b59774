//go:build e2e

package promotion

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

var (
	throughlineBin string
)

const (
	newDigest = "sha256:4b7e2a91c3d5f6081726354a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"
	oldDigest = "sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"
)

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughlineBin) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func gitEnv(home string) []string { return testenv.GitEnv(home) }

func git(t *testing.T, ctx context.Context, dir string, args ...string) string {
	t.Helper()
	return testenv.Git(t, ctx, gitEnv(dir), dir, args...)
}

func cli(ctx context.Context, dir string, args ...string) (testenv.CLIResult, error) {
	return testenv.RunCLI(ctx, throughlineBin, gitEnv(dir), args...)
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	must(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	}))
}

// seed pushes the example environment, with staging running and ACCEPTED
// at a digest production does not run yet, to the remote's main; the
// allowed-signers file lists the keys of production's approvers, alice and
// bob, which it returns.
func seed(t *testing.T, ctx context.Context, remote string) (alice, bob sshkey.Key) {
	t.Helper()
	work := t.TempDir()
	copyDir(t, filepath.Join(testenv.RepoRoot(t), "examples", "gitops-env"), work)
	testenv.RemoveRuntimeChecks(t, work) // no app serves and no Prometheus runs here
	testenv.RemoveTrust(t, work)         // made-up digests without evidence: e2e/supplychain's subject
	alice, bob = sshkey.New(t, "alice@example.com"), sshkey.New(t, "bob@example.com")
	must(t, os.WriteFile(filepath.Join(work, "allowed-signers"), []byte(sshkey.Signers(alice, bob)), 0o644))
	// The notifier's key, which the policy's evidenceSigners lists for
	// every environment: it signs the staging evidence below.
	notifier := sshkey.NewNotifier(t, "dev", "staging", "production")
	must(t, os.MkdirAll(filepath.Join(work, filepath.Dir(sshkey.EvidenceSignersFile)), 0o755))
	must(t, os.WriteFile(filepath.Join(work, sshkey.EvidenceSignersFile), []byte(notifier.Line()), 0o644))
	pol, err := os.ReadFile(filepath.Join(work, promotion.PolicyFile))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(work, promotion.PolicyFile), append(pol, sshkey.PolicyLine...), 0o644))
	k := filepath.Join(work, "apps/checkout/overlays/staging/kustomization.yaml")
	data, err := os.ReadFile(k)
	must(t, err)
	must(t, os.WriteFile(k, []byte(strings.Replace(string(data), "1.4.2@"+oldDigest, "1.5.0@"+newDigest, 1)), 0o644))
	res, err := cli(ctx, work, "render", "--hash", "--root", work, filepath.Join(work, "apps/checkout/overlays/staging"))
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("render --hash: %d %s", res.Code, res.Stderr)
	}
	hash := strings.TrimSpace(res.Stdout)
	ver, err := cli(ctx, work, "version")
	must(t, err)
	// The commit staging desires and observes: the overlay at 1.5.0.
	git(t, ctx, work, "init", "-q", "-b", "main")
	git(t, ctx, work, "add", ".")
	git(t, ctx, work, "commit", "-q", "-m", "staging desires checkout 1.5.0")
	stagingRev := git(t, ctx, work, "rev-parse", "HEAD")
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("checkout", 1,
		promotion.Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + newDigest, Digest: newDigest, SourceCommit: strings.Repeat("1", 40)},
		promotion.Target{Environment: "staging", Path: "apps/checkout/overlays/staging", Cluster: "staging", RenderedHash: hash, BaseRenderedHash: hash, Renderer: strings.TrimSpace(ver.Stdout)},
		t0, "e2e")
	must(t, err)
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40), RenderedHash: "sha256:" + strings.Repeat("3", 64), RuntimeEvidence: "evidence/dev/checkout/1.json"}, t0, "e2e"))
	must(t, rec.Approve("alice", rec.InputFor(strings.TrimSpace(ver.Stdout)), t0.Add(48*time.Hour), t0))
	must(t, rec.Reconcile(stagingRev, t0, "e2e"))
	evFile := evidence.Path("staging", "checkout", rec.PromotionID)
	must(t, rec.Accept(stagingRev, evFile, t0, "e2e"))
	out, err := rec.Marshal()
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(work, "promotion", "checkout"), 0o755))
	must(t, os.WriteFile(filepath.Join(work, "promotion", "checkout", "staging.yaml"), out, 0o644))
	// The notifier's evidence, signed, committed with the ACCEPTED record
	// (dated after the commit it observes).
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: "checkout", Environment: "staging", PromotionID: rec.PromotionID,
		Decision: promotion.Accepted, Image: rec.Artifact.Image, ArtifactDigest: newDigest, DesiredRevision: stagingRev, ObservedRevision: stagingRev,
		RenderedHash: hash, DesiredRenderedHash: hash, Time: time.Now().UTC().Truncate(time.Second),
		Pods: []evidence.Pod{{Workload: "Deployment/checkout-staging/checkout", Container: "api", Pod: "checkout-1", Pods: 2, Declared: newDigest,
			ImageID: "ghcr.io/throughline-dev/checkout@" + newDigest, Outcome: "Verified", Match: "Exact"}},
		ReportedBy: evidence.Reporter{Source: "argocd"}}
	evJSON, err := ev.Marshal()
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(work, filepath.Dir(evFile)), 0o755))
	must(t, os.WriteFile(filepath.Join(work, evFile), evJSON, 0o644))
	must(t, os.WriteFile(filepath.Join(work, evidence.SignaturePath(evFile)), signedevidence.Sign(t, notifier, evJSON), 0o644))
	git(t, ctx, work, "add", ".")
	git(t, ctx, work, "commit", "-q", "-m", "staging accepted checkout 1.5.0")
	git(t, ctx, work, "push", "-q", remote, "main")
	return alice, bob
}

func clone(t *testing.T, ctx context.Context, remote string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	git(t, ctx, filepath.Dir(dir), "clone", "-q", remote, dir)
	return dir
}

// TestConcurrentProposeOneAttempt: four clones propose the same promotion
// at once against the real smart-HTTP server. Exactly one branch and one
// record win; every other proposer returns the winner's attempt. Then the
// record goes VERIFIED and APPROVED through CAS pushes, and the PR job passes.
func TestConcurrentProposeOneAttempt(t *testing.T) {
	srv := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: "s3cr3t"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	remote, err := srv.CreateRepo(ctx, "platform/gitops-env.git")
	must(t, err)
	alice, bob := seed(t, ctx, remote)

	const n = 4
	clones := make([]string, n)
	for i := range clones {
		clones[i] = clone(t, ctx, remote)
	}
	results := make([]testenv.CLIResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clones {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			results[i], errs[i] = cli(ctx, clones[i], "promote", "propose", "--repo", clones[i], "--app", "checkout", "--from", "staging", "--to", "production")
		}(i)
	}
	close(start)
	wg.Wait()
	proposed, existing := 0, 0
	for i, r := range results {
		must(t, errs[i])
		if r.Code != 0 {
			t.Fatalf("propose %d: exit %d\n%s\n%s", i, r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stdout, "checkout-production-4b7e2a91c3d5-1") {
			t.Fatalf("propose %d returned another attempt:\n%s", i, r.Stdout)
		}
		switch {
		case strings.HasPrefix(r.Stdout, "proposed "):
			proposed++
		case strings.HasPrefix(r.Stdout, "existing attempt "):
			existing++
		}
	}
	if proposed != 1 || existing != n-1 {
		t.Fatalf("%d proposed, %d existing; want 1 and %d", proposed, existing, n-1)
	}
	heads := git(t, ctx, clones[0], "ls-remote", "--heads", "origin")
	if c := strings.Count(heads, "refs/heads/throughline/promote/"); c != 1 {
		t.Fatalf("%d promotion branches on the remote:\n%s", c, heads)
	}
	branch := promotion.AttemptKey{App: "checkout", Digest: newDigest, Environment: "production", Attempt: 1}.Branch()
	git(t, ctx, clones[1], "fetch", "-q", "origin")
	recData := git(t, ctx, clones[1], "show", "origin/"+branch+":promotion/checkout/production.yaml")
	rec, err := promotion.Parse("promotion/checkout/production.yaml", []byte(recData))
	must(t, err)
	if rec.State != promotion.Candidate || rec.Attempt != 1 {
		t.Fatalf("record %+v", rec)
	}

	// Verify and approve from two other clones (each fetches the branch).
	r, err := cli(ctx, clones[2], "promote", "verify", "--repo", clones[2], "--app", "checkout", "--to", "production")
	must(t, err)
	if r.Code != 0 {
		t.Fatalf("verify: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	// Production needs two signed approvals: alice's from one clone, bob's
	// from another, each signing with their own key.
	for i, k := range map[int]sshkey.Key{3: alice, 1: bob} {
		for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingkey", k.Private}, {"user.email", k.Principal}} {
			git(t, ctx, clones[i], "config", kv[0], kv[1])
		}
	}
	for _, i := range []int{3, 1} {
		r, err = cli(ctx, clones[i], "promote", "approve", "--repo", clones[i], "--app", "checkout", "--to", "production", "--expires", "1h")
		must(t, err)
		if r.Code != 0 {
			t.Fatalf("approve: %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
	}
	// Status from yet another clone sees main and the open attempt branch.
	st, err := cli(ctx, clones[0], "promote", "status", "--repo", clones[0], "-o", "json")
	must(t, err)
	if st.Code != 0 || !strings.Contains(st.Stdout, `"state": "APPROVED"`) || !strings.Contains(st.Stdout, `"state": "ACCEPTED"`) || !strings.Contains(st.Stdout, `"ref": "`+branch+`"`) {
		t.Fatalf("status: %d\n%s\n%s", st.Code, st.Stdout, st.Stderr)
	}
	// The PR job on a fresh clone.
	pr := clone(t, ctx, remote)
	git(t, ctx, pr, "fetch", "-q", "origin", branch+":"+branch)
	r, err = cli(ctx, pr, "promote", "check", "--repo", pr, "--base", "origin/main", "--head", branch)
	must(t, err)
	if r.Code != 0 {
		t.Fatalf("check: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// Nothing was forced: main is still the seed, and the branch's history
	// is linear from it (propose, verify, two signed approvals).
	if got := git(t, ctx, pr, "rev-list", "--count", "origin/main.."+branch); got != "4" {
		t.Fatalf("%s commits on the branch, want 4", got)
	}
}

// TestNonFastForwardRebase: another writer lands on the branch between our
// fetch and our push; the real server refuses the non-fast-forward push,
// gitrepo fetches, re-applies the change on the new tip and pushes again.
func TestNonFastForwardRebase(t *testing.T) {
	srv := testenv.StartGitServer(t, testenv.GitServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	remote, err := srv.CreateRepo(ctx, "platform/gitops-env.git")
	must(t, err)
	seed(t, ctx, remote)
	ours, other := clone(t, ctx, remote), clone(t, ctx, remote)
	repo, err := gitrepo.Open(ctx, ours)
	must(t, err)
	repo.Env = gitEnv(ours)
	calls := 0
	sha, err := repo.Update(ctx, "main", 3, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		calls++
		if calls == 1 {
			must(t, os.WriteFile(filepath.Join(other, "evidence.json"), []byte("{}\n"), 0o644))
			git(t, ctx, other, "add", ".")
			git(t, ctx, other, "commit", "-q", "-m", "someone else")
			git(t, ctx, other, "push", "-q", "origin", "main")
		}
		return map[string][]byte{"promotion/checkout/note.txt": []byte(tip + "\n")}, "ours", nil
	})
	must(t, err)
	if calls != 2 {
		t.Fatalf("change applied %d times, want 2", calls)
	}
	git(t, ctx, other, "pull", "-q", "--ff-only")
	if got := git(t, ctx, other, "rev-parse", "HEAD"); got != sha {
		t.Fatalf("remote main %s, want ours %s", got, sha)
	}
	git(t, ctx, other, "cat-file", "-e", sha+":evidence.json")
}
