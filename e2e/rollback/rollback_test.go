//go:build e2e

package rollback

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
)

var throughlineBin string

func TestMain(m *testing.M) { testenv.MainWithThroughline(m, &throughlineBin) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var isolated []string // DOCKER_CONFIG and cache dirs of the test

func gitEnv(home string) []string { return testenv.GitEnv(home, isolated...) }

func git(t *testing.T, ctx context.Context, dir string, args ...string) string {
	t.Helper()
	return testenv.Git(t, ctx, gitEnv(dir), dir, args...)
}

func cli(ctx context.Context, dir string, args ...string) (testenv.CLIResult, error) {
	return testenv.RunCLI(ctx, throughlineBin, gitEnv(dir), args...)
}

func push(t *testing.T, ctx context.Context, ref string) string {
	t.Helper()
	img, err := random.Image(512, 1)
	must(t, err)
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	must(t, remote.Write(r, img, remote.WithContext(ctx), remote.WithAuth(authn.Anonymous)))
	d, err := img.Digest()
	must(t, err)
	return d.String()
}

const overlay = "apps/web/overlays/production"

// writePolicy writes the policy naming the evidenceSigners file that lists
// the notifier key n (a real deployment's: the gates accept only evidence
// it signed).
func writePolicy(t *testing.T, work string, n sshkey.Notifier) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(work, filepath.Dir(sshkey.EvidenceSignersFile)), 0o755))
	must(t, os.WriteFile(filepath.Join(work, sshkey.EvidenceSignersFile), []byte(n.Line()), 0o644))
	must(t, os.WriteFile(filepath.Join(work, promotion.PolicyFile),
		[]byte("apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\n"+sshkey.PolicyLine), 0o644))
}

// accept writes the overlay at digest and its ACCEPTED record with the
// evidence the notifier n signs, commits.
func accept(t *testing.T, ctx context.Context, work, repo, tag, digest string, n sshkey.Notifier) {
	t.Helper()
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: web-production\nresources:\n  - ../../base\nimages:\n  - name: " +
		repo + "\n    newTag: \"" + tag + "@" + digest + "\"\n"
	must(t, os.WriteFile(filepath.Join(work, overlay, "kustomization.yaml"), []byte(k), 0o644))
	res, err := cli(ctx, work, "render", "--hash", "--root", work, filepath.Join(work, overlay))
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("render: %d %s", res.Code, res.Stderr)
	}
	hash := strings.TrimSpace(res.Stdout)
	ver, err := cli(ctx, work, "version")
	must(t, err)
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("web", 1,
		promotion.Artifact{Image: repo + ":" + tag + "@" + digest, Digest: digest, SourceCommit: strings.Repeat("1", 40)},
		promotion.Target{Environment: "production", Path: overlay, Cluster: "production", RenderedHash: hash, BaseRenderedHash: hash, Renderer: strings.TrimSpace(ver.Stdout)},
		t0, "e2e")
	must(t, err)
	// The overlay is the desired commit the controller observed.
	git(t, ctx, work, "add", ".")
	git(t, ctx, work, "commit", "-q", "-m", "production desires web "+tag)
	rev := git(t, ctx, work, "rev-parse", "HEAD")
	must(t, rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40), RenderedHash: hash, RuntimeEvidence: "evidence/staging/web/1.json"}, t0, "e2e"))
	must(t, rec.Approve("alice", rec.InputFor(strings.TrimSpace(ver.Stdout)), t0.Add(48*time.Hour), t0))
	must(t, rec.Reconcile(rev, t0, "e2e"))
	evPath := evidence.Path("production", "web", rec.PromotionID)
	must(t, rec.Accept(rev, evPath, t0, "e2e"))
	data, err := rec.Marshal()
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(work, "promotion", "web"), 0o755))
	must(t, os.WriteFile(filepath.Join(work, "promotion", "web", "production.yaml"), data, 0o644))
	// The notifier's evidence file, as it commits it with the record.
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: "web", Environment: "production", PromotionID: rec.PromotionID,
		Decision: promotion.Accepted, Image: rec.Artifact.Image, ArtifactDigest: digest, DesiredRevision: rev, ObservedRevision: rev,
		DesiredRenderedHash: hash, RenderedHash: hash, ReportedBy: evidence.Reporter{Source: "flux"}, Time: time.Now().UTC().Truncate(time.Second),
		Pods: []evidence.Pod{{Workload: "Deployment/web-production/web", Container: "web", Pod: "web-1", Pods: 1, Declared: digest,
			ImageID: repo + "@" + digest, Outcome: "Verified", Match: "Exact"}}}
	evData, err := ev.Marshal()
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(work, filepath.Dir(evPath)), 0o755))
	must(t, os.WriteFile(filepath.Join(work, evPath), evData, 0o644))
	must(t, os.WriteFile(filepath.Join(work, evidence.SignaturePath(evPath)), signedevidence.Sign(t, n, evData), 0o644))
	git(t, ctx, work, "add", ".")
	git(t, ctx, work, "commit", "-q", "-m", "production accepted web "+tag)
}

func clone(t *testing.T, ctx context.Context, remote string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	git(t, ctx, filepath.Dir(dir), "clone", "-q", remote, dir)
	return dir
}

// TestRollback: production accepted 1.0.0 then 1.1.0; rollback to the
// previous digest proposes 1.0.0 on a new attempt branch, main untouched; a
// digest never accepted there is refused, a rollback past an irreversible
// migration needs the explicit flag, a digest deleted from the registry is
// refused.
func TestRollback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	isolated = []string{"DOCKER_CONFIG=" + t.TempDir(), "THROUGHLINE_CACHE_DIR=" + t.TempDir()}
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	srv := testenv.StartGitServer(t, testenv.GitServerOptions{Username: "git", Password: "s3cr3t"})
	remoteURL, err := srv.CreateRepo(ctx, "platform/gitops.git")
	must(t, err)
	repo := reg.Host + "/web"
	a := push(t, ctx, repo+":1.0.0")
	b := push(t, ctx, repo+":1.1.0")
	never := push(t, ctx, repo+":2.0.0")

	work := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(work, "apps/web/base"), 0o755))
	must(t, os.MkdirAll(filepath.Join(work, overlay), 0o755))
	must(t, os.WriteFile(filepath.Join(work, "apps/web/base/kustomization.yaml"), []byte("resources:\n  - deployment.yaml\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(work, "apps/web/base/deployment.yaml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: "+repo+":1.0.0\n"), 0o644))
	key := sshkey.NewNotifier(t, "production")
	writePolicy(t, work, key)
	git(t, ctx, work, "init", "-q", "-b", "main")
	git(t, ctx, work, "add", ".")
	git(t, ctx, work, "commit", "-q", "-m", "web base")
	accept(t, ctx, work, repo, "1.0.0", a, key)
	accept(t, ctx, work, repo, "1.1.0", b, key)
	git(t, ctx, work, "push", "-q", remoteURL, "main")
	mainTip := git(t, ctx, work, "rev-parse", "HEAD")

	dir := clone(t, ctx, remoteURL)
	res, err := cli(ctx, dir, "rollback", "--repo", dir, "--app", "web", "--env", "production", "--to", "previous")
	must(t, err)
	if res.Code != 0 {
		t.Fatalf("rollback: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	branch := "throughline/promote/web/production/" + strings.TrimPrefix(a, "sha256:")[:12] + "-2"
	if !strings.Contains(res.Stdout, "branch "+branch) {
		t.Fatalf("rollback output: %s", res.Stdout)
	}
	check := clone(t, ctx, remoteURL)
	git(t, ctx, check, "fetch", "-q", "origin")
	if got := git(t, ctx, check, "rev-parse", "origin/main"); got != mainTip {
		t.Fatalf("main moved: %s, want %s", got, mainTip)
	}
	git(t, ctx, check, "merge-base", "--is-ancestor", mainTip, "origin/"+branch)
	if k := git(t, ctx, check, "show", "origin/"+branch+":"+overlay+"/kustomization.yaml"); !strings.Contains(k, "1.0.0@"+a) {
		t.Fatalf("overlay on the branch:\n%s", k)
	}
	rec, err := promotion.Parse("record", []byte(git(t, ctx, check, "show", "origin/"+branch+":promotion/web/production.yaml")))
	must(t, err)
	if rec.State != promotion.Verified || rec.Artifact.Digest != a || rec.Attempt != 2 || !rec.VerifiedIn.IsPriorAcceptance() ||
		rec.VerifiedIn.PriorAcceptance.PromotionID != (promotion.AttemptKey{App: "web", Digest: a, Environment: "production", Attempt: 1}).ID() {
		t.Fatalf("record %+v verifiedIn %+v", rec, rec.VerifiedIn)
	}

	for name, tc := range map[string]struct{ to, want string }{
		"never accepted": {never, "never ACCEPTED in production"},
	} {
		r, err := cli(ctx, dir, "rollback", "--repo", dir, "--app", "web", "--env", "production", "--to", tc.to)
		must(t, err)
		if r.Code != 3 || !strings.Contains(r.Stderr, tc.want) {
			t.Fatalf("%s: %d %s", name, r.Code, r.Stderr)
		}
	}
	// The current artifact ran an irreversible migration: refused without
	// the explicit flag (nothing pushed), proposed with it.
	mark := clone(t, ctx, remoteURL)
	dep := filepath.Join(mark, "apps/web/base/deployment.yaml")
	depData, err := os.ReadFile(dep)
	must(t, err)
	must(t, os.WriteFile(dep, []byte(strings.Replace(string(depData), "  name: web\n", "  name: web\n  annotations:\n    throughline.dev/irreversible-migration: \"true\"\n", 1)), 0o644))
	git(t, ctx, mark, "commit", "-q", "-am", "web 1.1.0 migrated the schema")
	git(t, ctx, mark, "push", "-q", "origin", "main")
	headsBefore := git(t, ctx, mark, "ls-remote", "--heads", "origin")
	irr, err := cli(ctx, mark, "rollback", "--repo", mark, "--app", "web", "--env", "production", "--to", "sha256:"+strings.TrimPrefix(a, "sha256:")[:12])
	must(t, err)
	if irr.Code != 3 || !strings.Contains(irr.Stderr, "--accept-irreversible-migration") || !strings.Contains(irr.Stderr, "Deployment.apps web-production/web") {
		t.Fatalf("irreversible migration without the flag: %d %s", irr.Code, irr.Stderr)
	}
	if after := git(t, ctx, mark, "ls-remote", "--heads", "origin"); after != headsBefore {
		t.Fatalf("a refused rollback pushed:\n%s\nwas\n%s", after, headsBefore)
	}
	irr, err = cli(ctx, mark, "rollback", "--repo", mark, "--app", "web", "--env", "production", "--to", a, "--accept-irreversible-migration")
	must(t, err)
	if irr.Code != 0 || !strings.Contains(irr.Stderr, "irreversible migration") {
		t.Fatalf("irreversible migration with the flag: %d %s %s", irr.Code, irr.Stdout, irr.Stderr)
	}

	ref, err := name.ParseReference(repo+"@"+a, name.Insecure)
	must(t, err)
	must(t, remote.Delete(ref, remote.WithContext(ctx), remote.WithAuth(authn.Anonymous)))
	gone, err := cli(ctx, dir, "rollback", "--repo", dir, "--app", "web", "--env", "production", "--to", "previous")
	must(t, err)
	if gone.Code != 3 || !strings.Contains(gone.Stderr, "no longer exists in the registry") {
		t.Fatalf("deleted digest: %d %s", gone.Code, gone.Stderr)
	}
}
