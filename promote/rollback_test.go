package promote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

const (
	webOverlay = "apps/web/overlays/production"
	webImage   = "registry.example.test/web"
)

var (
	digestA = "sha256:" + strings.Repeat("a", 64)
	digestB = "sha256:" + strings.Repeat("b", 64)
)

// accept writes web's production overlay with digest, an ACCEPTED record
// and the notifier's evidence file, and commits them.
func (f *fixture) accept(tag, digest string) string {
	t := f.t
	f.write(map[string]string{webOverlay + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"namespace: web-production\nresources:\n  - ../../base\nimages:\n  - name: " + webImage + "\n    newTag: \"" + tag + "@" + digest + "\"\n"})
	_, hash, err := gitops.WorkTree(f.root).Render(context.Background(), webOverlay)
	must(t, err)
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("web", 1, promotion.Artifact{Image: webImage + ":" + tag + "@" + digest, Digest: digest, SourceCommit: strings.Repeat("1", 40)},
		promotion.Target{Environment: "production", Path: webOverlay, Cluster: "production", RenderedHash: hash, BaseRenderedHash: hash, Renderer: renderer}, t0, "test")
	must(t, err)
	return f.acceptWeb(rec, tag)
}

// acceptWeb commits what a promotion of rec (web's production CANDIDATE,
// whose overlay is written) leaves in Git: the overlay as the desired
// commit, then rec reconciled and ACCEPTED at it with the notifier's
// evidence (every Pod running the digest), signed by the notifier key the
// policy lists. It returns the acceptance commit.
func (f *fixture) acceptWeb(rec *promotion.Record, what string) string {
	t, hash := f.t, rec.Target.RenderedHash
	t0 := time.Now().Add(-time.Hour)
	for _, err := range []error{
		rec.Verify(promotion.VerifiedIn{Environment: "staging", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40),
			RenderedHash: hash, RuntimeEvidence: "evidence/staging/web/x.json"}, t0, "test"),
		rec.Approve("alice", rec.InputFor(renderer), t0.Add(48*time.Hour), t0),
	} {
		must(t, err)
	}
	rev := f.commit("production desires " + what)
	must(t, rec.Reconcile(rev, t0, "test"))
	must(t, rec.Accept(rev, evidence.Path("production", "web", rec.PromotionID), t0, "test"))
	data, err := rec.Marshal()
	must(t, err)
	digest := rec.Artifact.Digest
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: "web", Environment: "production", PromotionID: rec.PromotionID,
		Decision: promotion.Accepted, Image: rec.Artifact.Image, ArtifactDigest: digest, DesiredRevision: rev, ObservedRevision: rev,
		DesiredRenderedHash: hash, RenderedHash: hash, ReportedBy: evidence.Reporter{Source: "flux"}, Time: time.Now().UTC().Truncate(time.Second),
		Pods: []evidence.Pod{{Workload: "Deployment/web-production/web", Container: "web", Pod: "web-1", Pods: 2, Declared: digest,
			ImageID: webImage + "@" + digest, Outcome: "Verified", Match: "Exact"}}}
	evData, err := ev.Marshal()
	must(t, err)
	files := map[string]string{promotion.RecordPath("web", "production"): string(data), evidence.Path("production", "web", rec.PromotionID): string(evData)}
	f.signEvidence(files)
	f.write(files)
	return f.commit("accepted " + what)
}

// signEvidence signs the evidence files of files with the fixture's
// notifier key (useNotifier).
func (f *fixture) signEvidence(files map[string]string) {
	f.useNotifier()
	signedevidence.SignAll(f.t, f.notifier, files)
}

// useNotifier makes the fixture's notifier key, once, and lists it in the
// policy (evidenceSigners; a policy of its own when the repository has
// none), as a deployment does: evidence counts only signed by it.
func (f *fixture) useNotifier() {
	if f.notifier.Signer != nil {
		return
	}
	f.notifier = sshkey.NewNotifier(f.t, "dev", "staging", "production")
	pol := sshkey.Policy
	if data, err := os.ReadFile(filepath.Join(f.root, promotion.PolicyFile)); err == nil {
		pol = string(data) + sshkey.PolicyLine
	}
	f.write(map[string]string{promotion.PolicyFile: pol, sshkey.EvidenceSignersFile: f.notifier.Line()})
}

// newRollbackFixture is web in production: A accepted, then B (desired now).
func newRollbackFixture(t *testing.T) (*fixture, string) {
	f := &fixture{t: t, top: t.TempDir()}
	f.root = f.top
	f.write(map[string]string{
		"apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"apps/web/base/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n" +
			"  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n" +
			"      containers:\n        - name: web\n          image: " + webImage + ":1.0.0\n",
	})
	f.git("init", "-q", "-b", "main")
	acceptedA := f.accept("1.0.0", digestA)
	f.accept("1.1.0", digestB)
	var err error
	f.repo, err = gitops.Open(context.Background(), f.root)
	must(t, err)
	return f, acceptedA
}

func TestRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, acceptedA := newRollbackFixture(t)
	var asked []string
	req := RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay, Renderer: renderer,
		Exists: func(_ context.Context, ref string) (bool, error) { asked = append(asked, ref); return true, nil }}
	res, err := Rollback(ctx, f.repo, req)
	must(t, err)
	rec := res.Proposal.Record
	if res.From != digestB || res.To.Artifact.Digest != digestA || res.To.Commit != acceptedA || rec.State != promotion.Verified ||
		!rec.VerifiedIn.IsPriorAcceptance() || rec.Attempt != 2 || len(asked) != 1 || asked[0] != webImage+"@"+digestA {
		t.Fatalf("rollback %+v (record %+v, asked %v)", res, rec, asked)
	}
	// The gate re-reads the prior acceptance from Git: only the approval is missing.
	if rep := f.check(res.Proposal.Branch, time.Now()); strings.Join(rules(rep), " ") != gate.RuleNotApproved {
		t.Fatalf("check of the rollback: %v %q", rules(rep), rep.Refusals)
	}
	// The same request again is the same attempt.
	if again, err := Rollback(ctx, f.repo, req); err != nil || !again.Proposal.Existing || again.Proposal.Branch != res.Proposal.Branch {
		t.Fatalf("again: %+v %v", again, err)
	}
}

func TestRollbackRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := newRollbackFixture(t)
	unreachable := exitcode.NotDecided(errors.New("registry unreachable"))
	record := errorLines(t, "testdata/rollback-refusals.golden", 4)
	for _, tc := range []struct {
		name   string
		to     string
		exists func(context.Context, string) (bool, error)
		code   int
		rule   string // of a refusal; the wording of each is in the golden file
	}{
		{"deleted", ledger.Previous, func(context.Context, string) (bool, error) { return false, nil }, exitcode.Refused, RuleRollbackTarget},
		{"registry down", ledger.Previous, func(context.Context, string) (bool, error) { return false, unreachable }, exitcode.Pending, ""},
		{"current", digestB, func(context.Context, string) (bool, error) { return true, nil }, exitcode.Refused, ledger.RuleTarget},
		{"never accepted", "sha256:" + strings.Repeat("c", 64), func(context.Context, string) (bool, error) { return true, nil }, exitcode.Refused,
			ledger.RuleTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rollback(ctx, f.repo, RollbackRequest{App: "web", Env: "production", To: tc.to, Path: webOverlay, Renderer: renderer, Exists: tc.exists})
			switch {
			case tc.rule != "":
				refusedBy(t, err, tc.rule)
			case exitcode.Code(err) != tc.code || !errors.Is(err, unreachable):
				t.Fatalf("%v (exit %d), want exit %d, the registry's error", err, exitcode.Code(err), tc.code)
			}
			record(tc.name, err)
		})
	}
	if b := f.git("branch", "--list", "throughline/*"); b != "" {
		t.Fatalf("a refused rollback made branches: %s", b)
	}
}
