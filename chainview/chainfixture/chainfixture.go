// Package chainfixture builds, for the tests of the chain view (package
// chainview, e2e/webview) and its screenshots, a real Git repository from
// the example GitOps environment (examples/gitops-env) whose history holds
// one story per state the view shows, each written the way throughline
// writes it (the overlay pinned and the record APPROVED in the desired
// commit, RECONCILING, then the notifier's one commit of the record's
// decision and its evidence file):
//
//   - checkout: ACCEPTED in staging, then promoted to production and
//     ACCEPTED there (all nine arrows proven);
//   - web: ACCEPTED in staging, HALTED in production at the runtime
//     evidence (a Pod runs the old image);
//   - cart: two digests ACCEPTED in production, then a rollback to the
//     first, verified by its prior acceptance and ACCEPTED;
//   - search: ACCEPTED in staging, then paused by break-glass there.
//
// NewOCI builds another story, in which the controllers of staging and
// production pull an OCI artifact (the registry's source.oci): checkout
// ACCEPTED in staging, then in production, whose revisions are the
// artifact's digest and the commit it was built from (dev reads Git).
//
// As in a real deployment, the policy names an evidenceSigners file
// (sshkey.EvidenceSignersFile) listing the notifier's key (Notifier) for
// every environment, and the notifier signs every evidence file it
// commits (<file>.sig beside it).
//
// Commit times, and the notifier's key, are fixed so the commit ids (and
// golden pages) are stable.
// It is for tests only.
package chainfixture

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/signedevidence"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

// T0 is when the story starts; Now is when the tests read it.
var (
	T0  = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	Now = T0.Add(50 * time.Hour)
)

// Digests of the story.
var (
	Checkout = "sha256:4b7e2a91c3d5f6081726354a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"
	Web      = digest("e0")
	WebOld   = digest("e1")
	CartA    = digest("a0")
	CartB    = digest("b0")
	Search   = digest("50")
)

func digest(b string) string { return "sha256:" + strings.Repeat(b, 32) }

// Repo is the story's repository.
type Repo struct {
	t    testing.TB
	Dir  string
	Repo *gitops.Repo
	tick int
	// OCI are the environments whose records Reconcile writes as an OCI
	// environment's (promote reconcile with source.oci): the desired
	// revision ArtifactOf(the desired commit), the commit the desiredCommit.
	OCI map[string]bool
	// Notifier signs the evidence the story commits; the evidenceSigners
	// file lists it for dev, staging and production.
	Notifier sshkey.Notifier
}

// Environments are the example's environments, the ones the notifier's
// key is listed for.
var Environments = []string{"dev", "staging", "production"}

// New builds the story in a temporary directory from the example at
// example (the path of examples/gitops-env).
func New(t testing.TB, example string) *Repo {
	t.Helper()
	r := open(t, example, nil)
	r.story()
	return r
}

// OCIPolicy is the source the controllers of env pull in NewOCI's
// registry.
func OCIPolicy(env string) string {
	return "    source:\n      oci:\n        repository: registry.example.com/gitops/" + env + "\n        tag: " + env + "\n"
}

// NewOCI builds the OCI story (see the package comment) from the example
// at example, whose registry NewOCI gives production an OCI source.
func NewOCI(t testing.TB, example string) *Repo {
	t.Helper()
	r := open(t, example, func(dir string) {
		f := filepath.Join(dir, "throughline-policy.yaml")
		data, err := os.ReadFile(f)
		must(t, err)
		s := string(data)
		for _, env := range []string{"staging", "production"} {
			s = strings.Replace(s, "  "+env+":\n", "  "+env+":\n"+OCIPolicy(env), 1)
		}
		must(t, os.WriteFile(f, []byte(s), 0o644))
	})
	r.OCI["staging"], r.OCI["production"] = true, true
	stag := r.Accept("checkout", "staging", "1.5.0", Checkout, 1, r.fromDev)
	r.Accept("checkout", "production", "1.5.0", Checkout, 1, r.from(stag))
	return r
}

// ArtifactOf is the manifest digest of the OCI artifact CI pushed from
// commit in the stories (a made-up, stable digest).
func ArtifactOf(commit string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("artifact of "+commit)))
}

// open commits the example at example, changed by edit, in a temporary
// directory and opens it as report and serve do.
func open(t testing.TB, example string, edit func(dir string)) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir(), OCI: map[string]bool{},
		Notifier: sshkey.FixedNotifier(t, "chainfixture notifier", Environments...)}
	copyDir(t, example, r.Dir)
	if edit != nil {
		edit(r.Dir)
	}
	// The notifier's key, listed in the policy's evidenceSigners.
	pol := filepath.Join(r.Dir, promotion.PolicyFile)
	data, err := os.ReadFile(pol)
	must(t, err)
	must(t, os.WriteFile(pol, append(data, sshkey.PolicyLine...), 0o644))
	gittest.Write(t, r.Dir, map[string]string{sshkey.EvidenceSignersFile: r.Notifier.Line()})
	// The example's own record and evidence are illustrations with
	// made-up commits: the story writes real ones.
	for _, p := range []string{"promotion/checkout", "evidence/dev", "evidence/staging"} {
		must(t, os.RemoveAll(filepath.Join(r.Dir, filepath.FromSlash(p))))
	}
	r.git("init", "-q", "-b", "main")
	r.commit("the example environment", nil)
	r.Repo, err = gitops.OpenLocal(context.Background(), r.Dir)
	if err == nil {
		err = r.Repo.ReadInProcess() // as report and serve read it
	}
	must(t, err)
	return r
}

func (r *Repo) story() {
	stag := r.Accept("checkout", "staging", "1.5.0", Checkout, 1, r.fromDev)
	r.Accept("checkout", "production", "1.5.0", Checkout, 1, r.from(stag))
	stag = r.Accept("web", "staging", "2.1.0", Web, 1, r.fromDev)
	r.Halt("web", "production", "2.1.0", Web, r.from(stag))
	r.Accept("cart", "production", "1.0.0", CartA, 1, r.fromDev)
	r.Accept("cart", "production", "1.1.0", CartB, 1, r.fromDev)
	r.Accept("cart", "production", "1.0.0", CartA, 2, r.priorOf("cart", "production", CartA))
	r.Accept("search", "staging", "3.0.0", Search, 1, r.fromDev)
	r.Pause("search", "staging")
}

// Verifier fills a new record's VERIFIED gate.
type Verifier func(rec *promotion.Record, at time.Time) error

// Acceptance is what Accept committed.
type Acceptance struct {
	Record                  *promotion.Record
	Desired, Accepted, Path string
}

// fromDev is a VERIFIED claim of a dev acceptance the repository does not
// hold (no dev record): the first environment of most test stories.
func (r *Repo) fromDev(rec *promotion.Record, at time.Time) error {
	dev := strings.Repeat("d", 40)
	return rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: dev, ObservedRevision: dev, RenderedHash: rec.Target.RenderedHash,
		RuntimeEvidence: evidence.Path("dev", rec.App, "ci")}, at, "throughline promote verify")
}

// FromDev is the VERIFIED claim of a dev acceptance the repository does
// not hold (for tests that add their own records).
func (r *Repo) FromDev(rec *promotion.Record, at time.Time) error { return r.fromDev(rec, at) }

// from is the VERIFIED claim promote verify writes from a's evidence (its
// revisions are digests when a's environment reads an OCI artifact).
func (r *Repo) from(a Acceptance) Verifier {
	return func(rec *promotion.Record, at time.Time) error {
		d := a.Record.Reconciling.DesiredRevision
		return rec.Verify(promotion.VerifiedIn{Environment: a.Record.Target.Environment, DesiredRevision: d, ObservedRevision: d,
			RenderedHash: a.Record.Target.RenderedHash, RuntimeEvidence: a.Path, EvidenceCommit: a.Accepted}, at, "throughline promote verify")
	}
}

// priorOf is the VERIFIED claim throughline rollback writes: what
// ledger.History proves env accepted for digest.
func (r *Repo) priorOf(app, env, digest string) Verifier {
	return func(rec *promotion.Record, at time.Time) error {
		l, err := ledger.History(context.Background(), r.Repo, "main", app, env)
		if err != nil {
			return err
		}
		for _, a := range l.Accepted {
			if a.Artifact.Digest == digest {
				return rec.VerifyByPriorAcceptance(a.Prior(), a.DesiredRevision, a.ObservedRevision, a.RenderedHash, at, "throughline rollback")
			}
		}
		return fmt.Errorf("%s never accepted %s", env, digest)
	}
}

// next is the next moment of the story.
func (r *Repo) next() time.Time {
	r.tick++
	return T0.Add(time.Duration(r.tick) * 10 * time.Minute)
}

// Reconcile commits the desired state of app in env (the overlay pinned,
// the record approved) and the record RECONCILING: the record and the
// desired commit.
func (r *Repo) Reconcile(app, env, tag, digest string, attempt int, verify Verifier) (*promotion.Record, string) {
	r.t.Helper()
	return r.reconcile(r.newRecord(app, env, tag, digest, attempt, nil), verify)
}

// newRecord is a new CANDIDATE record of app's digest in env (ev: the
// supply-chain evidence of a candidacy, nil for a proposal).
func (r *Repo) newRecord(app, env, tag, digest string, attempt int, ev *promotion.SupplyChain) *promotion.Record {
	r.t.Helper()
	image := "ghcr.io/throughline-dev/" + app
	rec, err := promotion.NewCandidate(app, attempt, promotion.Artifact{Image: image + ":" + tag + "@" + digest, Digest: digest,
		SourceCommit: strings.Repeat(digest[7:9], 20), Evidence: ev},
		promotion.Target{Environment: env, Path: "apps/" + app + "/overlays/" + env, Cluster: cluster(env),
			RenderedHash: "sha256:" + strings.Repeat(digest[7:9], 31) + "ff", BaseRenderedHash: "sha256:" + strings.Repeat("0", 64), Renderer: "v0.1.0"},
		r.next(), "throughline promote propose")
	must(r.t, err)
	return rec
}

// Bundles are the supply-chain evidence of a candidacy in the stories:
// a signature, a provenance and a vulnerability scan (its summary as
// promote candidate records it: Candidate sets it finished ScanAge
// before the candidacy), and the evidence manifest listing them.
var Bundles = []promotion.EvidenceItem{
	{Kind: "signature", Digest: digest("5a"), Signer: "keys/ci.pub"},
	{Kind: "provenance", Digest: digest("5b"), PredicateType: "https://slsa.dev/provenance/v1", Signer: "keys/ci.pub"},
	{Kind: "vulnerability-scan", Digest: digest("5d"), PredicateType: "https://in-toto.io/attestation/vulns/v0.2", Signer: "keys/ci.pub",
		WorstSeverity: "high", WorstFindings: 2, Findings: 5},
}

// ScanAge is how long before its candidacy the stories' scan finished.
const ScanAge = 3 * time.Hour

// BundleManifest is the evidence manifest of Bundles.
var BundleManifest = digest("5c")

// Candidate commits what promote candidate commits for app's digest in
// env, a first environment: the CANDIDATE record whose evidence
// (Bundles, BundleManifest) names its own attempt, in a commit whose
// message seals that evidence (gate.SealedCandidacy's lines). It returns
// the record.
func (r *Repo) Candidate(app, env, tag, digest string, attempt int) *promotion.Record {
	t := r.t
	t.Helper()
	ev := &promotion.SupplyChain{Environment: env, Items: slices.Clone(Bundles), Manifest: BundleManifest}
	rec := r.newRecord(app, env, tag, digest, attempt, ev)
	ev.Candidacy = rec.PromotionID
	for i := range ev.Items {
		if ev.Items[i].Kind == "vulnerability-scan" {
			ev.Items[i].ScanFinished = rec.History[0].At.Add(-ScanAge).UTC().Format(time.RFC3339)
		}
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "candidate %s %s for %s\n\n%s%s\n", app, ledger.ShortDigest(digest), env, gate.SealPromotion, rec.PromotionID)
	for _, it := range ev.Items {
		fmt.Fprintf(&msg, "%s%s %s\n", gate.SealEvidence, it.Kind, it.Digest)
	}
	fmt.Fprintf(&msg, "%s%s\n", gate.SealManifest, ev.Manifest)
	for _, it := range ev.Items {
		if it.Scanned() {
			fmt.Fprintf(&msg, "%s%s\n", gate.SealScan, gate.ScanSeal(it))
		}
	}
	r.commit(msg.String(), map[string][]byte{promotion.RecordPath(app, env): marshal(t, rec)})
	return rec
}

// AcceptCandidacy is Candidate, then the record VERIFIED by its candidacy
// (promote verify), approved, RECONCILING and ACCEPTED by the notifier.
func (r *Repo) AcceptCandidacy(app, env, tag, digest string, attempt int) Acceptance {
	r.t.Helper()
	rec := r.Candidate(app, env, tag, digest, attempt)
	return r.accept(r.reconcile(rec, func(rec *promotion.Record, at time.Time) error {
		return rec.VerifyByCandidacy(at, "throughline promote verify")
	}))
}

// reconcile has rec verified by verify, approved, its overlay pinned in
// the desired commit, then RECONCILING: the record and the desired commit.
func (r *Repo) reconcile(rec *promotion.Record, verify Verifier) (*promotion.Record, string) {
	t := r.t
	t.Helper()
	app, env, tag, digest := rec.App, rec.Target.Environment, imageTag(rec.Artifact.Image), rec.Artifact.Digest
	image := "ghcr.io/throughline-dev/" + app
	must(t, verify(rec, r.next()))
	in := rec.InputFor("v0.1.0")
	exp := r.next().Add(48 * time.Hour)
	if env == "production" {
		must(t, rec.AddApproval("alice@example.com", in, exp, r.next(), 2))
		must(t, rec.AddApproval("bob@example.com", in, exp, r.next(), 2))
	} else {
		must(t, rec.Approve("alice@example.com", in, exp, r.next()))
	}
	overlay := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s-%s\nresources:\n  - ../../base\n"+
		"images:\n  - name: %s\n    newTag: \"%s@%s\"\n", app, env, image, tag, digest)
	if app == "checkout" {
		overlay = "" // the example's own overlays: pin by replacing the digest
	}
	files := map[string][]byte{promotion.RecordPath(app, env): marshal(t, rec)}
	k := "apps/" + app + "/overlays/" + env + "/kustomization.yaml"
	if overlay == "" {
		overlay = r.repin(k, tag, digest)
	}
	files[k] = []byte(overlay)
	desired := r.commit(fmt.Sprintf("promote %s %s to %s", app, tag, env), files)
	if r.OCI[env] {
		must(t, rec.ReconcileOCI(ArtifactOf(desired), desired, r.next(), "throughline promote reconcile"))
	} else {
		must(t, rec.Reconcile(desired, r.next(), "throughline promote reconcile"))
	}
	r.commit(fmt.Sprintf("%s RECONCILING", rec.PromotionID), map[string][]byte{promotion.RecordPath(app, env): marshal(t, rec)})
	return rec, desired
}

// repin replaces the image tag and digest of the example overlay k.
func (r *Repo) repin(k, tag, digest string) string {
	data, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(k)))
	must(r.t, err)
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.Contains(l, "@sha256:") {
			lead := l[:strings.Index(l, ":")+1]
			lines[i] = lead + " \"" + tag + "@" + digest + "\""
		}
	}
	return strings.Join(lines, "\n")
}

// Accept is Reconcile and the notifier's commit of ACCEPTED evidence.
func (r *Repo) Accept(app, env, tag, digest string, attempt int, verify Verifier) Acceptance {
	r.t.Helper()
	return r.accept(r.Reconcile(app, env, tag, digest, attempt, verify))
}

// accept is the notifier's commit of ACCEPTED evidence of rec, RECONCILING
// at desired.
func (r *Repo) accept(rec *promotion.Record, desired string) Acceptance {
	t := r.t
	t.Helper()
	app, env := rec.App, rec.Target.Environment
	file := evidence.Path(env, app, rec.PromotionID)
	at := r.next()
	must(t, rec.Accept(rec.Reconciling.DesiredRevision, file, at, "throughline serve"))
	ev := r.Evidence(rec, desired, at)
	ev.Decision = promotion.Accepted
	accepted := r.commit(fmt.Sprintf("%s ACCEPTED", rec.PromotionID), map[string][]byte{
		promotion.RecordPath(app, env): marshal(t, rec), file: marshalEvidence(t, ev)})
	return Acceptance{Record: rec, Desired: desired, Accepted: accepted, Path: file}
}

// Halt is Reconcile and the notifier's commit of HALTED evidence: a Pod
// still runs WebOld.
func (r *Repo) Halt(app, env, tag, digest string, verify Verifier) {
	t := r.t
	t.Helper()
	rec, desired := r.Reconcile(app, env, tag, digest, 1, verify)
	at := r.next()
	ev := r.Evidence(rec, desired, at)
	ev.Decision, ev.Class = promotion.Halted, "live"
	ev.Pods[0].ImageID, ev.Pods[0].Outcome, ev.Pods[0].Match = "ghcr.io/throughline-dev/"+app+"@"+WebOld, "Mismatch", ""
	pod := ev.Pods[0]
	ev.Reason = fmt.Sprintf("Pod %s (container %s) runs imageID %s, not the declared %s", pod.Pod, pod.Container, pod.ImageID, digest)
	must(t, rec.Stop(promotion.Halted, ev.Reason, at, "throughline serve"))
	r.commit(fmt.Sprintf("%s HALTED", rec.PromotionID), map[string][]byte{
		promotion.RecordPath(app, env): marshal(t, rec), evidence.Path(env, app, rec.PromotionID): marshalEvidence(t, ev)})
}

// Evidence is the notifier's evidence of rec at desired (without a
// decision): one Pod of two running the digest.
func (r *Repo) Evidence(rec *promotion.Record, desired string, at time.Time) *evidence.Record {
	app, env := rec.App, rec.Target.Environment
	verified := at.Add(-time.Minute)
	ev := &evidence.Record{SchemaVersion: evidence.SchemaVersion, App: app, Environment: env, PromotionID: rec.PromotionID,
		Image: rec.Artifact.Image, ArtifactDigest: rec.Artifact.Digest, DesiredRevision: desired, ObservedRevision: desired,
		RenderedHash: rec.Target.RenderedHash, DesiredRenderedHash: rec.Target.RenderedHash, Acceptance: app + "-" + env + "/" + app,
		VerifiedAt: &verified, Time: at,
		Pods: []evidence.Pod{{Workload: "Deployment/" + app + "-" + env + "/" + app, Container: "api", Pod: app + "-5f7c9d8b6-x2k4p", Pods: 2,
			Declared: rec.Artifact.Digest, ImageID: "ghcr.io/throughline-dev/" + app + "@" + rec.Artifact.Digest, Outcome: "Verified", Match: "Exact",
			Platform: "linux/amd64"}},
		ReportedBy: evidence.Reporter{Source: "argocd", Controller: "argocd-notifications-controller", Object: "Application/argocd/" + app + "-" + env,
			Reason: "on-deployed"}}
	if rec.IsOCI() { // the notifier's OCI evidence: the artifact, and the commit its annotation names
		c := rec.Reconciling
		ev.DesiredRevision, ev.ObservedRevision, ev.DesiredCommit, ev.ObservedCommit = c.DesiredRevision, c.DesiredRevision, c.DesiredCommit,
			c.DesiredCommit
	}
	r.passedChecks(ev, rec.Target.Path)
	return ev
}

// passedChecks adds to ev the runtime checks the overlay dir declares (in
// the work tree), every one Passed, after a soak as long as declared.
func (r *Repo) passedChecks(ev *evidence.Record, dir string) {
	data, err := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(dir), checkfile.File))
	if err != nil {
		return // no checks declared
	}
	rc, err := checkfile.Parse(checkfile.File, data, checkfile.Options{AnyNamespace: true})
	if err != nil {
		r.t.Fatal(err)
	}
	ev.Checks = evidence.Checks(rc, nil)
	for i := range ev.Checks {
		ev.Checks[i].Verdict, ev.Checks[i].Value, ev.Checks[i].EvaluatedAt = "Passed", "0.001", ev.VerifiedAt
	}
	started := ev.VerifiedAt.Add(-rc.Soak.Duration)
	ev.SoakStartedAt, ev.Soak = &started, rc.Soak.Duration.String() // as the notifier records them
}

// Pause commits an active break-glass pause of app in env.
func (r *Repo) Pause(app, env string) {
	t := r.t
	t.Helper()
	at := r.next()
	p := &breakglass.Record{SchemaVersion: breakglass.SchemaVersion, App: app, Environment: env, Controller: breakglass.ArgoCD,
		Object: breakglass.Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: app + "-" + env,
			ResourceVersion: "4711"},
		State: breakglass.Paused, SourceRevision: strings.Repeat("0", 40), Operator: "carol@example.com", Ticket: "INC-1234",
		PausedAt: at, ExpiresAt: Now.Add(4 * time.Hour)}
	data, err := p.Marshal()
	must(t, err)
	r.commit("break-glass: pause "+app+" in "+env, map[string][]byte{breakglass.Path(env, app): data})
}

func cluster(env string) string {
	switch env {
	case "production":
		return "prod-eu-1"
	case "staging":
		return "staging-eu-1"
	}
	return "dev-eu-1"
}

// git runs git in gittest's environment with the story's author and the
// time of its current moment: a local exec, not gittest.Run, because every
// commit id of the story (in the web view's golden pages) depends on both.
func (r *Repo) git(args ...string) string {
	r.t.Helper()
	date := T0.Add(time.Duration(r.tick) * 10 * time.Minute).Format(time.RFC3339)
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = gittest.Env(r.Dir, "GIT_AUTHOR_NAME=throughline", "GIT_AUTHOR_EMAIL=throughline@example.invalid",
		"GIT_COMMITTER_NAME=throughline", "GIT_COMMITTER_EMAIL=throughline@example.invalid", "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files (slash path -> content), and beside every evidence
// file among them its signature by the notifier (unless files gives one),
// and commits every change.
func (r *Repo) commit(msg string, files map[string][]byte) string {
	r.t.Helper()
	unsigned := map[string][]byte{}
	for p, data := range files {
		if _, ok := files[evidence.SignaturePath(p)]; !ok {
			unsigned[p] = data
		}
	}
	signedevidence.SignAll(r.t, r.Notifier, unsigned)
	signed := maps.Clone(files)
	maps.Copy(signed, unsigned)
	return r.commitAsIs(msg, signed)
}

// commitAsIs writes files and commits every change.
func (r *Repo) commitAsIs(msg string, files map[string][]byte) string {
	r.t.Helper()
	text := make(map[string]string, len(files))
	for p, data := range files {
		text[p] = string(data)
	}
	gittest.Write(r.t, r.Dir, text)
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// Git runs git in the repository (for tests that add their own twist).
func (r *Repo) Git(args ...string) string { return r.git(args...) }

// Orphan is a commit on no branch, unrelated to main's history.
func (r *Repo) Orphan() string {
	r.t.Helper()
	tree := r.git("rev-parse", "HEAD^{tree}")
	return r.git("commit-tree", "-m", "unrelated", tree)
}

// Next is the next moment of the story.
func (r *Repo) Next() time.Time { return r.next() }

// Commit writes files and commits them on main (for tests that add their
// own twist to the story), every evidence file signed by the notifier
// (beside it, unless files gives its .sig).
func (r *Repo) Commit(msg string, files map[string][]byte) string { return r.commit(msg, files) }

// CommitUnsigned is Commit without signing any evidence file: what a
// contributor without the notifier's key commits.
func (r *Repo) CommitUnsigned(msg string, files map[string][]byte) string {
	return r.commitAsIs(msg, files)
}

// imageTag is the tag of name:tag@digest.
func imageTag(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	return ref[strings.LastIndex(ref, ":")+1:]
}

func marshal(t testing.TB, rec *promotion.Record) []byte {
	data, err := rec.Marshal()
	must(t, err)
	return data
}

func marshalEvidence(t testing.TB, ev *evidence.Record) []byte {
	data, err := ev.Marshal()
	must(t, err)
	return data
}

func copyDir(t testing.TB, src, dst string) {
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
