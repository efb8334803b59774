//go:build e2e

package argocdcontrol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promote"
	"github.com/throughline-dev/throughline/promotion"
)

// chainRun is what experiment 1 leaves for the later experiments: the
// suite's registry, the repository its images live in, the two digests
// production ACCEPTED (A, then B) and the merge commit production synced B
// at.
type chainRun struct {
	reg          *testenv.Registry
	repo         string // <registry>/throughline-dev/checkout
	a, b         string
	merge        string
	isolated     []string // DOCKER_CONFIG and the registry cache of the CLI
	svc          *notifier.Service
	productionAt *promotion.Record
	// summaryPub is the PEM public key of the notifier's verification
	// summaries.
	summaryPub []byte
}

// chain is experiment 1, the positive chain through the real application
// controller. The images live in the suite's registry (CNCF distribution):
// rollback (experiment 6) asks the registry whether its target still
// exists, so the example's ghcr.io digests cannot be used. Setup: a
// platform commit on main moves both overlays to A in that registry (the
// test pushes it: it is not a promotion); both controllers sync it, the
// Pods run A (played), production is adopted at A (throughline adopt) and
// that baseline goes ACCEPTED through the notifier's resync. Then CI pins
// B in staging (throughline pin resolving the tag in the registry);
// staging's controller syncs it, the Pods run B,
// the resync writes staging's evidence; promote propose, verify, two
// signed approvals, promote check; the branch is merged (a merge commit,
// pushed as a forge would); production's controller syncs the merge
// commit, the Pods run B, the resync writes production's evidence; the
// records and the evidence correlate the whole way.
func (e *env) chain(run *chainRun) {
	opt := []remote.Option{remote.WithContext(e.ctx), remote.WithAuth(authn.Anonymous)}
	a, b := testenv.MultiArchIndex(e.t), testenv.MultiArchIndex(e.t)
	a.Push(e.ctx, e.t, run.repo+":1.4.2", opt...)
	b.Push(e.ctx, e.t, run.repo+":1.5.0", opt...)
	run.a, run.b = a.Digest, b.Digest
	p := e.production()
	revA := e.bothAt(p, *run)

	// Production adopted as it runs when throughline is installed
	// (throughline adopt): its baseline A, ACCEPTED through the notifier's
	// resync, is the rollback target of experiment 6.
	svc := run.svc
	r := e.cli(run.isolated, "adopt", "--repo", e.clone(), "--app", "checkout", "--env", "production", "--by", "platform-team", "-o", "json")
	if r.Code != 0 {
		e.t.Fatalf("arrow production runs A -> adopted baseline: adopt exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var adopted promote.Adoption
	must(e.t, json.Unmarshal([]byte(r.Stdout), &adopted))
	if adopted.Revision != revA || adopted.Record.Artifact.Digest != run.a || adopted.Record.State != promotion.Reconciling {
		e.t.Fatalf("arrow production runs A -> adopted baseline: %s %s of %s at %.12s, want RECONCILING A at %.12s",
			adopted.Record.PromotionID, adopted.Record.State, adopted.Record.Artifact.Digest, adopted.Revision, revA)
	}
	e.git("pull", "-q", "--ff-only", "origin", "main")
	e.accept(p, svc, adopted.Record, revA)

	stg, stgObserved := e.stagingB(svc, *run)
	stgEv := evidence.Path("staging", "checkout", stg.PromotionID)
	e.checkSummary(*run, stgEv)
	dir := e.clone()
	propose := func(attempt int) string {
		branch := promotion.AttemptKey{App: "checkout", Digest: run.b, Environment: "production", Attempt: attempt}.Branch()
		r := e.cli(run.isolated, "promote", "propose", "--repo", dir, "--app", "checkout", "--from", "staging", "--to", "production")
		if r.Code != 0 || !strings.Contains(r.Stdout, branch) {
			e.t.Fatalf("arrow staging evidence -> production proposal (attempt %d on %s): propose exit %d\n%s\n%s", attempt, branch, r.Code,
				r.Stdout, r.Stderr)
		}
		return branch
	}
	// Attempt 1 is REJECTED by a reviewer; the same digest again is
	// attempt 2, and the rejected branch no longer counts as open: verify
	// and approve pick attempt 2 without --branch (issue 34).
	rejected := propose(1)
	if r := e.cli(run.isolated, "promote", "reject", "--repo", dir, "--app", "checkout", "--to", "production", "--by", e.alice.Principal,
		"--reason", "the release notes are missing"); r.Code != 0 {
		e.t.Fatalf("arrow production proposal -> REJECTED: reject exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if rec := e.recordAt("origin/"+rejected, "production"); rec.State != promotion.Rejected {
		e.t.Fatalf("arrow production proposal -> REJECTED: %s on %s is %s", rec.PromotionID, rejected, rec.State)
	}
	branch := propose(2)
	if r := e.cli(run.isolated, "promote", "verify", "--repo", dir, "--app", "checkout", "--to", "production"); r.Code != 0 ||
		!strings.Contains(r.Stdout, branch) {
		e.t.Fatalf("arrow staging evidence -> production VERIFIED (attempt 2, picked without --branch): verify exit %d\n%s\n%s", r.Code, r.Stdout,
			r.Stderr)
	}
	merge := e.approveAndMerge(p, branch, *run)
	if img := imageOf(p.deployment()); img != run.repo+":1.5.0@"+run.b {
		e.t.Fatalf("arrow production merge commit -> live Deployment at B: image %s", img)
	}
	p.rollout(p.deployment(), "p2", run.b)
	p.waitHealthy("production Pods run B -> app Healthy")
	prod := e.reconcileAndAccept(p, svc, merge)

	// The correlation, read from Git at main's tip.
	tip := e.remoteTip(e.remote)
	stgNow := e.recordAt(tip, "staging")
	ev := e.evidenceAt(tip, evidence.Path("production", "checkout", prod.PromotionID))
	for _, c := range []struct {
		arrow     string
		got, want string
	}{
		{"source commit -> B (production artifact)", prod.Artifact.SourceCommit + " " + prod.Artifact.Digest, stg.Artifact.SourceCommit + " " + run.b},
		{"B -> staging desired commit", stgNow.Reconciling.DesiredRevision + " " + prod.VerifiedIn.DesiredRevision,
			stg.Reconciling.DesiredRevision + " " + stg.Reconciling.DesiredRevision},
		{"staging desired commit -> staging observed revision", stgNow.Accepted.ObservedRevision + " " + prod.VerifiedIn.ObservedRevision, stgObserved + " " + stgObserved},
		{"staging observed revision -> staging evidence", stgNow.Accepted.RuntimeEvidence + " " + prod.VerifiedIn.RuntimeEvidence, stgEv + " " + stgEv},
		{"staging evidence -> production desired commit", prod.VerifiedIn.Environment + " " + prod.Reconciling.DesiredRevision + " " + ev.DesiredRevision,
			"staging " + merge + " " + merge},
		{"production desired commit -> production observed revision", prod.Accepted.ObservedRevision + " " + ev.ObservedRevision, merge + " " + merge},
		{"production observed revision -> production evidence", prod.Accepted.RuntimeEvidence + " " + ev.ArtifactDigest + " " + string(ev.Decision),
			evidence.Path("production", "checkout", prod.PromotionID) + " " + run.b + " ACCEPTED"},
	} {
		if c.got != c.want {
			e.t.Fatalf("arrow %s: %q, want %q", c.arrow, c.got, c.want)
		}
	}
	e.t.Logf("chain: source %.12s -> %s -> staging %.12s/%.12s -> %s -> production %.12s/%.12s -> %s",
		prod.Artifact.SourceCommit, short(run.b), stg.Reconciling.DesiredRevision, stgObserved, stgEv, merge, merge,
		prod.Accepted.RuntimeEvidence)
	run.merge, run.productionAt = merge, prod
}

// bothAt is the setup of experiment 1: a platform commit moves staging and
// production to A in the suite's registry (pin --set, newName); both
// controllers sync it and both rollouts are played. It returns the commit.
func (e *env) bothAt(p *env, run chainRun) string {
	for _, path := range []string{stagingPath, prodPath} {
		if r := e.cli(nil, "pin", "--set", image+"="+run.repo+":1.4.2@"+run.a, "--root", e.work, filepath.Join(e.work, path)); r.Code != 0 {
			e.t.Fatalf("pin --set %s: exit %d\n%s\n%s", path, r.Code, r.Stdout, r.Stderr)
		}
	}
	e.git("commit", "-q", "-am", "platform: checkout from "+run.reg.Host)
	e.git("push", "-q", "origin", "main")
	rev := e.head()
	for _, x := range []*env{e, p} {
		x.refresh("normal")
		x.syncedAt(x.application+": platform commit -> observed revision (sync)", rev)
		d := x.deployment()
		if img := imageOf(d); img != run.repo+":1.4.2@"+run.a {
			e.t.Fatalf("arrow %s: platform commit -> live Deployment at A: image %s", x.application, img)
		}
		x.rollout(d, "a1", run.a)
	}
	e.waitHealthy("staging Pods run A -> app Healthy")
	p.waitHealthy("production Pods run A -> app Healthy")
	return rev
}

// accept is the notifier's part for a RECONCILING record of x's
// environment desired at desired: the controller compares the record's
// commit (nothing to sync), one resync pass commits the evidence, checked
// against the controller's last sync and the Pods.
func (e *env) accept(x *env, svc *notifier.Service, rec *promotion.Record, desired string) string {
	e.t.Helper()
	name := rec.Target.Environment
	rc := e.head()
	x.refresh("normal")
	u := x.comparedAt(name+" record commit -> compared, Synced", rc)
	observed := str(u, "status", "operationState", "syncResult", "revision")
	if observed != desired {
		e.t.Fatalf("arrow %s desired commit -> %s observed revision: last sync at %.12s, want %.12s", name, name, observed, desired)
	}
	if r := svc.Resyncer().Once(e.ctx); len(r) != 1 || r[0].Outcome != notifier.ResyncAccepted {
		e.t.Fatalf("arrow %s observed revision -> %s runtime evidence: resync pass %+v", name, name, r)
	}
	// The verification summary is published and recorded in the
	// background after the evidence commit: wait for it, so that the
	// test's next push does not race the notifier's.
	svc.WaitSummaries()
	x.checkEvidence(e.remote, e.remoteTip(e.remote), rec, observed)
	e.git("pull", "-q", "--ff-only", "origin", "main")
	return observed
}

// stagingB is CI pinning B in staging: the tag 1.5.0 resolved by
// throughline pin in the registry, pushed; the controller syncs it; the
// Pods run B (played); the staging record RECONCILING at the pin commit;
// the notifier's resync writes the evidence. It returns the record as
// committed and the revision the controller observed.
func (e *env) stagingB(svc *notifier.Service, run chainRun) (*promotion.Record, string) {
	kz := filepath.Join(e.work, filepath.FromSlash(stagingKz))
	b, err := os.ReadFile(kz)
	must(e.t, err)
	must(e.t, os.WriteFile(kz, []byte(strings.Replace(string(b), `"1.4.2@`+run.a+`"`, `"1.5.0"`, 1)), 0o644))
	if r := e.cli(run.isolated, "pin", "--root", e.work, filepath.Join(e.work, stagingPath)); r.Code != 0 {
		e.t.Fatalf("arrow CI -> staging pinned at B: pin exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if b, _ := os.ReadFile(kz); !strings.Contains(string(b), `"1.5.0@`+run.b+`"`) {
		e.t.Fatalf("arrow tag 1.5.0 -> B: pin wrote\n%s", b)
	}
	e.git("commit", "-q", "-am", "ci: checkout 1.5.0 in staging")
	e.git("push", "-q", "origin", "main")
	revB := e.head()
	e.refresh("normal")
	e.syncedAt("staging pin commit -> staging observed revision (sync)", revB)
	d := e.deployment()
	if img := imageOf(d); img != run.repo+":1.5.0@"+run.b {
		e.t.Fatalf("arrow staging pin commit -> live Deployment at B: image %s", img)
	}
	e.rollout(d, "b1", run.b)
	e.waitHealthy("staging Pods run B -> app Healthy")
	rec := e.reconcilingRecord(revB, run.repo+":1.5.0", run.b, 1)
	return rec, e.accept(e, svc, rec, revB)
}

// approveAndMerge approves the attempt on branch as alice and bob (each
// signing with their key, without --branch: the attempt is the only open
// one), lands an unrelated commit on main (the storefront team's values),
// runs the PR job against main's new tip (the gate compares from the merge
// base), merges the branch into main with a merge commit (as a forge
// would), and waits for production's controller to sync that commit. It
// returns the merge commit.
func (e *env) approveAndMerge(p *env, branch string, run chainRun) string {
	for _, k := range []sshkey.Key{e.alice, e.bob} {
		a := e.clone()
		e.signAs(a, k)
		r := e.cli(run.isolated, "promote", "approve", "--repo", a, "--app", "checkout", "--to", "production", "--expires", "1h")
		if r.Code != 0 || !strings.Contains(r.Stdout, branch) {
			e.t.Fatalf("arrow production VERIFIED -> APPROVED (%s picked without --branch): approve as %s exit %d\n%s\n%s", branch, k.Principal,
				r.Code, r.Stdout, r.Stderr)
		}
	}
	other := e.clone()
	values := filepath.Join(other, "apps", "storefront", "overlays", "staging", "values-staging.yaml")
	data, err := os.ReadFile(values)
	must(e.t, err)
	must(e.t, os.WriteFile(values, append(data, "# the storefront team's note\n"...), 0o644))
	e.in(other, "commit", "-qam", "storefront: a note (an unrelated merge while "+branch+" is open)")
	e.in(other, "push", "-q", "origin", "HEAD:main")
	pr := e.clone()
	if r := e.cli(run.isolated, "promote", "check", "--repo", pr, "--base", "origin/main", "--head", "origin/"+branch); r.Code != 0 {
		e.t.Fatalf("arrow production APPROVED -> PR check: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	e.in(pr, "merge", "-q", "--no-ff", "-m", "Merge "+branch, "origin/"+branch)
	e.in(pr, "push", "-q", "origin", "HEAD:main")
	merge := e.in(pr, "rev-parse", "HEAD")
	e.git("pull", "-q", "--ff-only", "origin", "main")
	p.refresh("normal")
	p.syncedAt("production merge commit -> production observed revision (sync)", merge)
	return merge
}

// reconcileAndAccept is the post-merge job (promote reconcile at the merge
// commit) and the notifier's resync writing production's evidence at the
// revision the controller synced. It returns production's record at main.
func (e *env) reconcileAndAccept(p *env, svc *notifier.Service, merge string) *promotion.Record {
	post := e.clone()
	if r := e.cli(nil, "promote", "reconcile", "--repo", post, "--app", "checkout", "--to", "production", "--revision", merge); r.Code != 0 {
		e.t.Fatalf("arrow production merge -> RECONCILING: reconcile exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	e.git("pull", "-q", "--ff-only", "origin", "main")
	rec := e.recordAt(e.head(), "production")
	if rec.State != promotion.Reconciling || rec.Reconciling.DesiredRevision != merge {
		e.t.Fatalf("arrow production merge -> RECONCILING: %s %s %+v", rec.PromotionID, rec.State, rec.Reconciling)
	}
	e.accept(p, svc, rec, merge)
	return e.recordAt(e.head(), "production")
}

// recordAt is envName's record of checkout at rev on the Git server.
func (e *env) recordAt(rev, envName string) *promotion.Record {
	e.t.Helper()
	dir := e.clone()
	rp := promotion.RecordPath("checkout", envName)
	rec, err := promotion.Parse(rp, []byte(e.in(dir, "show", rev+":"+rp)))
	must(e.t, err)
	return rec
}

// evidenceAt is the evidence file at rev on the Git server.
func (e *env) evidenceAt(rev, file string) *evidence.Record {
	e.t.Helper()
	dir := e.clone()
	ev, err := evidence.Parse(file, []byte(e.in(dir, "show", rev+":"+file)))
	must(e.t, err)
	return ev
}
