package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promote"
	"github.com/throughline-dev/throughline/promotion"
)

const (
	app          = "checkout"
	stagingPath  = "apps/checkout/overlays/staging"
	prodPath     = "apps/checkout/overlays/production"
	approveHours = "1h"
)

// walk is the chain: setup (registry, keys, the repository), production's
// baseline adopted and accepted, two releases promoted from CI to
// production (the second with a tampering attempt refused), a rollback
// proposed and rejected, a third release accepted in staging (what the
// README's promotion block proposes to production) and the report written.
func (d *demo) walk(ctx context.Context) error {
	var err error
	if d.keys, err = newKeys(filepath.Join(d.cfg.Out, "keys")); err != nil {
		return &stepError{"keys", err}
	}
	host, stop, err := startRegistry()
	if err != nil {
		return err
	}
	defer stop()
	var rel [4]release
	for i, v := range []string{"1.4.2", "1.5.0", "1.6.0", "1.7.0"} {
		if rel[i], err = pushRelease(ctx, host, v); err != nil {
			return &stepError{"registry", err}
		}
	}
	d.say("registry", "%s/%s: 1.4.2 %s, 1.5.0 %s, 1.6.0 %s, 1.7.0 %s (each an index: linux/amd64, linux/arm64)", host, imagePath,
		short(rel[0].Digest()), short(rel[1].Digest()), short(rel[2].Digest()), short(rel[3].Digest()))
	for _, r := range rel[1:] {
		if err := attest(ctx, d.keys.ci, r, d.cfg.Now().UTC()); err != nil {
			return &stepError{"CI signs " + r.Version, err}
		}
	}
	d.say("CI", "1.5.0, 1.6.0 and 1.7.0 signed with the CI key: signature, SLSA provenance (%s), CycloneDX SBOM, scan finished now (no finding)",
		strings.TrimPrefix(sourceRepo, "https://"))
	if err := d.setupRepo(rel[0]); err != nil {
		return err
	}
	rp, err := newReplayer(ctx, d)
	if err != nil {
		return &stepError{"notifier", err}
	}
	defer rp.close()
	if err := d.adopt(ctx, rp, rel[0]); err != nil {
		return err
	}
	for i, r := range rel[1:3] {
		if err := d.release(ctx, rp, r); err != nil {
			return err
		}
		if err := d.production(ctx, rp, r, i == 1); err != nil {
			return err
		}
	}
	if err := d.rollback(rel[1], rel[2]); err != nil {
		return err
	}
	// The last release stops in staging: what the README's "Promote the
	// verified digest" block proposes to production.
	if err := d.release(ctx, rp, rel[3]); err != nil {
		return err
	}
	d.next = rel[3]
	return d.finish()
}

// setupRepo copies the example into Out/gitops, makes Out/origin.git its
// origin and commits the platform setup on main: the demo's keys, then
// checkout's overlays moved to the demo registry (1.4.2).
func (d *demo) setupRepo(base release) error {
	d.work, d.origin = filepath.Join(d.cfg.Out, "gitops"), filepath.Join(d.cfg.Out, "origin.git")
	fail := func(err error) error { return &stepError{"platform setup", err} }
	if err := os.CopyFS(d.work, os.DirFS(d.cfg.Example)); err != nil {
		return fail(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", d.origin},
		{"-C", d.work, "init", "-q", "-b", "main"},
		{"-C", d.work, "add", "-A"},
		{"-C", d.work, "commit", "-q", "-m", "the example (examples/gitops-env)"},
		{"-C", d.work, "remote", "add", "origin", d.origin},
		{"-C", d.work, "push", "-q", "-u", "origin", "main"},
	} {
		if _, err := d.git(d.cfg.Out, args...); err != nil {
			return fail(err)
		}
	}
	if err := d.keys.install(d.work); err != nil {
		return fail(err)
	}
	keysCommit, err := d.commit(d.work, "platform setup: the demo's throwaway keys (CI, approvers, notifier)")
	if err != nil {
		return fail(err)
	}
	d.say("platform", "%s keys/ci.pub (CI), allowed-signers (alice, bob), %s (the notifier: staging, production) on main",
		short(keysCommit), evidenceSignersFile)
	for _, p := range []string{stagingPath, prodPath} {
		if _, err := d.tl(d.work, 0, "pin", "--log-level", "warn", "--set", exampleImage+"="+base.Image(), "--root", d.work,
			filepath.Join(d.work, p)); err != nil {
			return fail(err)
		}
	}
	pinCommit, err := d.commit(d.work, "platform setup: checkout "+base.Version+" from the demo registry in staging and production")
	if err != nil {
		return fail(err)
	}
	d.say("platform", "%s staging and production run checkout %s %s from the demo registry (throughline pin --set)",
		short(pinCommit), base.Version, short(base.Digest()))
	return nil
}

// commit commits everything in dir on its branch and pushes it; it
// returns the commit.
func (d *demo) commit(dir, msg string) (string, error) {
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", msg}, {"push", "-q", "origin", "HEAD"}} {
		if _, err := d.git(dir, args...); err != nil {
			return "", err
		}
	}
	return d.git(dir, "rev-parse", "HEAD")
}

// pull brings the work repository to origin's main.
func (d *demo) pull() error {
	_, err := d.git(d.work, "pull", "-q", "--ff-only", "origin", "main")
	return err
}

// record is env's record of checkout at rev in dir.
func (d *demo) record(dir, rev, env string) (*promotion.Record, error) {
	p := promotion.RecordPath(app, env)
	data, err := d.git(dir, "show", rev+":"+p)
	if err != nil {
		return nil, err
	}
	return promotion.Parse(p, []byte(data))
}

// expect fails the step unless rec is in state want.
func expect(step string, rec *promotion.Record, want promotion.State) error {
	if rec.State != want {
		return &stepError{step, fmt.Errorf("%s is %s, want %s", rec.PromotionID, rec.State, want)}
	}
	return nil
}

// adopt records production's baseline (throughline adopt) and accepts it
// through the notifier: production's first accepted digest.
func (d *demo) adopt(ctx context.Context, rp *replayer, base release) error {
	out, err := d.tl(d.work, 0, "adopt", "--log-level", "warn", "--repo", d.work, "--app", app, "--env", "production", "--by", "platform-team",
		"-o", "json")
	if err != nil {
		return &stepError{"adopt", err}
	}
	var a promote.Adoption
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		return &stepError{"adopt", err}
	}
	if err := expect("adopt", a.Record, promotion.Reconciling); err != nil {
		return err
	}
	if a.Record.Artifact.Digest != base.Digest() {
		return &stepError{"adopt", fmt.Errorf("adopted %s, want %s", a.Record.Artifact.Digest, base.Digest())}
	}
	d.say("adopt", "production: %s RECONCILING at %s, its baseline %s %s (throughline adopt)", a.Record.PromotionID, short(a.Revision),
		base.Version, short(base.Digest()))
	if err := d.pull(); err != nil {
		return err
	}
	return d.accept(ctx, rp, "production", a.Revision)
}

// accept replays the Argo CD notification of env's Application synced at
// rev, Healthy; the notifier must write ACCEPTED evidence for the record
// desiring rev, signed with its key.
func (d *demo) accept(ctx context.Context, rp *replayer, env, rev string) error {
	step := "notifier " + env
	got, err := rp.deliver(ctx, env, rev)
	if err != nil {
		return &stepError{step, err}
	}
	if got.Status != 200 || got.Result != "accepted" {
		return &stepError{step, fmt.Errorf("the notifier answered %d %s: %s", got.Status, got.Result, got.Reason)}
	}
	if err := d.pull(); err != nil {
		return err
	}
	rec, err := d.record(d.work, "HEAD", env)
	if err != nil {
		return &stepError{step, err}
	}
	if err := expect(step, rec, promotion.Accepted); err != nil {
		return err
	}
	evFile := evidence.Path(env, app, rec.PromotionID)
	if rec.Accepted.ObservedRevision != rev || rec.Accepted.RuntimeEvidence != evFile {
		return &stepError{step, fmt.Errorf("%s ACCEPTED at %s with %s, want %s with %s", rec.PromotionID, rec.Accepted.ObservedRevision,
			rec.Accepted.RuntimeEvidence, rev, evFile)}
	}
	ev, err := d.openEvidence(env, evFile)
	if err != nil {
		return &stepError{step, err}
	}
	if ev.Decision != promotion.Accepted || ev.DesiredRevision != rev || ev.ObservedRevision != rev || ev.ArtifactDigest != rec.Artifact.Digest {
		return &stepError{step, fmt.Errorf("%s says %s for %s at desired %s, observed %s; want ACCEPTED for %s at %s", evFile, ev.Decision,
			ev.ArtifactDigest, ev.DesiredRevision, ev.ObservedRevision, rec.Artifact.Digest, rev)}
	}
	d.say("notifier", "%s: %s ACCEPTED at %s (Argo CD's delivery replayed): %s, signed by the notifier's key, commit %s",
		env, rec.PromotionID, short(rev), evFile, short(got.Commit))
	return nil
}

// release walks r from CI to staging's acceptance: candidate, verify,
// approve, the PR check, merge, reconcile, the notifier.
func (d *demo) release(ctx context.Context, rp *replayer, r release) error {
	fmt.Fprintf(d.out, "== checkout %s %s, source commit %s\n", r.Version, short(r.Digest()), short(r.SourceCommit))
	ci, err := d.clone("ci-" + r.Version)
	if err != nil {
		return err
	}
	out, err := d.tl(ci, 0, "promote", "candidate", "--log-level", "warn", "--repo", ci, "--app", app, "--to", "staging", "--image", r.Image(),
		"--source-commit", r.SourceCommit, "-o", "json")
	if err != nil {
		return &stepError{"candidate", err}
	}
	var cand promote.Proposal
	if err := json.Unmarshal([]byte(out), &cand); err != nil {
		return &stepError{"candidate", err}
	}
	if err := expect("candidate", cand.Record, promotion.Candidate); err != nil {
		return err
	}
	sc := cand.Record.Artifact.Evidence
	if sc == nil || len(sc.Items) != 4 || cand.Record.Artifact.Digest != r.Digest() {
		return &stepError{"candidate", fmt.Errorf("%s records %s with evidence %+v, want %s with 4 bundles", cand.Record.PromotionID,
			cand.Record.Artifact.Digest, sc, r.Digest())}
	}
	var kinds []string
	for _, it := range sc.Items {
		kinds = append(kinds, it.Kind)
	}
	d.say("candidate", "staging: %s CANDIDATE, %s verified against staging's trust policy, on %s", cand.Record.PromotionID,
		strings.Join(kinds, ", "), cand.Branch)
	// The first environment: VERIFIED by its candidacy (docs/supply-chain.md),
	// approved (staging names no approvers), the PR check, the merge.
	if _, err := d.tl(ci, 0, "promote", "verify", "--log-level", "warn", "--repo", ci, "--app", app, "--to", "staging"); err != nil {
		return &stepError{"verify staging", err}
	}
	if err := d.stateOn(ci, cand.Branch, "staging", "verify", promotion.Verified, "VERIFIED by its candidacy (the evidence re-verified)"); err != nil {
		return err
	}
	if _, err := d.tl(ci, 0, "promote", "approve", "--log-level", "warn", "--repo", ci, "--app", app, "--to", "staging", "--approver", "release-manager",
		"--expires", approveHours); err != nil {
		return &stepError{"approve staging", err}
	}
	if err := d.stateOn(ci, cand.Branch, "staging", "approve", promotion.Approved,
		"APPROVED by release-manager (staging names no approvers)"); err != nil {
		return err
	}
	if err := d.check(ci, cand.Branch); err != nil {
		return err
	}
	merge, err := d.merge(ci, cand.Branch)
	if err != nil {
		return &stepError{"merge " + cand.Branch, err}
	}
	if err := d.reconcile(ci, "staging", merge); err != nil {
		return err
	}
	return d.accept(ctx, rp, "staging", merge)
}

// production walks r, accepted in staging, to production: propose,
// verify, two approvals, the PR check, (tamper: a refused commit,
// dropped), merge, reconcile, production's acceptance.
func (d *demo) production(ctx context.Context, rp *replayer, r release, tamper bool) error {
	pr, err := d.clone("propose-" + r.Version)
	if err != nil {
		return err
	}
	out, err := d.tl(pr, 0, "promote", "propose", "--log-level", "warn", "--repo", pr, "--app", app, "--from", "staging", "--to", "production",
		"-o", "json")
	if err != nil {
		return &stepError{"propose", err}
	}
	var prop promote.Proposal
	if err := json.Unmarshal([]byte(out), &prop); err != nil {
		return &stepError{"propose", err}
	}
	if err := expect("propose", prop.Record, promotion.Candidate); err != nil {
		return err
	}
	branch := prop.Branch
	d.say("propose", "production: %s CANDIDATE, proposed on %s (only the digest in %s changes)", prop.Record.PromotionID, branch, prodPath)
	if _, err := d.tl(pr, 0, "promote", "verify", "--log-level", "warn", "--repo", pr, "--app", app, "--to", "production"); err != nil {
		return &stepError{"verify", err}
	}
	if _, err := d.git(pr, "fetch", "-q", "origin"); err != nil {
		return err
	}
	rec, err := d.record(pr, "origin/"+branch, "production")
	if err != nil {
		return &stepError{"verify", err}
	}
	if err := expect("verify", rec, promotion.Verified); err != nil {
		return err
	}
	d.say("verify", "production: %s VERIFIED by staging's evidence %s (observed %s)", rec.PromotionID, rec.VerifiedIn.RuntimeEvidence,
		short(rec.VerifiedIn.ObservedRevision))
	for _, who := range []struct{ email, key string }{{"alice@example.com", d.keys.alice}, {"bob@example.com", d.keys.bob}} {
		if err := d.approve(branch, who.email, who.key); err != nil {
			return err
		}
	}
	if err := d.check(pr, branch); err != nil {
		return err
	}
	if tamper {
		if err := d.tamper(pr, branch); err != nil {
			return err
		}
	}
	if _, err := d.git(pr, "checkout", "-q", "main"); err != nil {
		return err
	}
	if _, err := d.git(pr, "pull", "-q", "--ff-only", "origin", "main"); err != nil {
		return err
	}
	merge, err := d.merge(pr, branch)
	if err != nil {
		return &stepError{"merge " + branch, err}
	}
	if err := d.reconcile(pr, "production", merge); err != nil {
		return err
	}
	return d.accept(ctx, rp, "production", merge)
}

// merge merges origin/branch into main in dir with a merge commit and
// pushes main, as a forge's merge button does; it returns the merge commit.
func (d *demo) merge(dir, branch string) (string, error) {
	if _, err := d.git(dir, "fetch", "-q", "origin"); err != nil {
		return "", err
	}
	if _, err := d.git(dir, "merge", "-q", "--no-ff", "-m", "Merge "+branch, "origin/"+branch); err != nil {
		return "", err
	}
	if _, err := d.git(dir, "push", "-q", "origin", "HEAD:main"); err != nil {
		return "", err
	}
	m, err := d.git(dir, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	d.say("merged", "%s into main: merge commit %s, pushed", branch, short(m))
	return m, nil
}

// reconcile is the post-merge job: env's record RECONCILING at merge.
func (d *demo) reconcile(dir, env, merge string) error {
	step := "reconcile " + env
	if _, err := d.tl(dir, 0, "promote", "reconcile", "--log-level", "warn", "--repo", dir, "--app", app, "--to", env, "--revision", merge); err != nil {
		return &stepError{step, err}
	}
	if _, err := d.git(dir, "fetch", "-q", "origin"); err != nil {
		return err
	}
	rec, err := d.record(dir, "origin/main", env)
	if err != nil {
		return &stepError{step, err}
	}
	if err := expect(step, rec, promotion.Reconciling); err != nil {
		return err
	}
	if rec.Reconciling.DesiredRevision != merge {
		return &stepError{step, fmt.Errorf("%s desires %s, want the merge commit %s", rec.PromotionID, rec.Reconciling.DesiredRevision, merge)}
	}
	d.say("reconcile", "%s: %s RECONCILING, desired revision %s", env, rec.PromotionID, short(merge))
	return d.pull()
}

// approve is one approver's signed approval of the open attempt, in a
// clone of their own whose commits git signs with their SSH key.
func (d *demo) approve(branch, email, key string) error {
	step := "approve as " + email
	dir, err := d.clone("approve-" + strings.TrimSuffix(email, "@example.com"))
	if err != nil {
		return err
	}
	for _, kv := range [][2]string{{"gpg.format", "ssh"}, {"user.signingkey", key}, {"user.email", email},
		{"user.name", strings.TrimSuffix(email, "@example.com")}} {
		if _, err := d.git(dir, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	out, err := d.tl(dir, 0, "promote", "approve", "--log-level", "warn", "--repo", dir, "--app", app, "--to", "production", "--expires", approveHours)
	if err != nil {
		return &stepError{step, err}
	}
	if !strings.Contains(out, branch) {
		return &stepError{step, fmt.Errorf("approve did not pick %s:\n%s", branch, out)}
	}
	if _, err := d.git(dir, "fetch", "-q", "origin"); err != nil {
		return err
	}
	rec, err := d.record(dir, "origin/"+branch, "production")
	if err != nil {
		return &stepError{step, err}
	}
	tip, err := d.git(dir, "rev-parse", "origin/"+branch)
	if err != nil {
		return err
	}
	d.say("approve", "%s signed %s's approval %d of %d (SSH, expires in %s): commit %s, state %s", strings.TrimSuffix(email, "@example.com"),
		rec.PromotionID, len(rec.Approvals), 2, approveHours, short(tip), rec.State)
	return nil
}

// check is the required PR job on the attempt branch: exit 0.
func (d *demo) check(dir, branch string) error {
	if _, err := d.git(dir, "fetch", "-q", "origin"); err != nil {
		return err
	}
	out, err := d.tl(dir, 0, "promote", "check", "--log-level", "warn", "--repo", dir, "--base", "origin/main", "--head", "origin/"+branch)
	if err != nil {
		return &stepError{"promote check", err}
	}
	d.say("check", "promote check --base origin/main --head origin/%s: exit 0, %s", branch, firstLine(out, "OK"))
	return nil
}

var replicas = regexp.MustCompile(`(?m)^(\s*count:\s*)6\s*$`)

// tamper commits, on top of the approved attempt in a local branch,
// production's replicas 6 -> 12; promote check must refuse it (exit 3);
// the commit is then dropped (it was never pushed).
func (d *demo) tamper(dir, branch string) error {
	const step = "tamper"
	if _, err := d.git(dir, "checkout", "-q", "-b", "tamper", "origin/"+branch); err != nil {
		return err
	}
	kz := filepath.Join(dir, filepath.FromSlash(prodPath), "kustomization.yaml")
	data, err := os.ReadFile(kz)
	if err != nil {
		return err
	}
	if !replicas.Match(data) {
		return &stepError{step, fmt.Errorf("%s has no replicas count 6 to change", kz)}
	}
	if err := os.WriteFile(kz, replicas.ReplaceAll(data, []byte("${1}12")), 0o644); err != nil {
		return err
	}
	if _, err := d.git(dir, "commit", "-q", "-am", "production: 12 replicas (on the approved promotion branch)"); err != nil {
		return err
	}
	c, err := d.git(dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	out, err := d.tl(dir, 3, "promote", "check", "--log-level", "warn", "--repo", dir, "--base", "origin/main", "--head", "HEAD")
	if err != nil {
		return &stepError{step, err}
	}
	d.say("tamper", "commit %s (production's replicas 6 -> 12) on the approved branch: promote check exit 3, %s", short(c), firstLine(out, "REFUSED"))
	if _, err := d.git(dir, "checkout", "-q", "--detach", "origin/"+branch); err != nil {
		return err
	}
	if _, err := d.git(dir, "branch", "-q", "-D", "tamper"); err != nil {
		return err
	}
	tip, err := d.git(dir, "rev-parse", "origin/"+branch)
	if err != nil {
		return err
	}
	d.say("dropped", "commit %s: never pushed, %s is still the approved %s", short(c), branch, short(tip))
	return nil
}

// firstLine is the first line of out starting with prefix (else its first line).
func firstLine(out, prefix string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[0])
}

// rollback proposes production back to prev, the digest it accepted
// before cur (throughline rollback --to previous).
func (d *demo) rollback(prev, cur release) error {
	const step = "rollback"
	dir, err := d.clone("rollback")
	if err != nil {
		return err
	}
	out, err := d.tl(dir, 0, "rollback", "--log-level", "warn", "--repo", dir, "--app", app, "--env", "production", "--to", "previous", "-o", "json")
	if err != nil {
		return &stepError{step, err}
	}
	var rb struct {
		Proposal promote.Proposal `json:"proposal"`
		From     string           `json:"from"`
	}
	if err := json.Unmarshal([]byte(out), &rb); err != nil {
		return &stepError{step, err}
	}
	rec := rb.Proposal.Record
	if rec == nil {
		return &stepError{step, fmt.Errorf("no proposal:\n%s", out)}
	}
	if err := expect(step, rec, promotion.Verified); err != nil {
		return err
	}
	if rec.Artifact.Digest != prev.Digest() || rb.From != cur.Digest() || !rec.VerifiedIn.IsPriorAcceptance() {
		return &stepError{step, fmt.Errorf("%s rolls %s back to %s (%s), want %s back to %s by its prior acceptance", rec.PromotionID, rb.From,
			rec.Artifact.Digest, rec.VerifiedIn.Kind, cur.Digest(), prev.Digest())}
	}
	d.say("rollback", "production: %s VERIFIED, %s -> %s %s by production's acceptance %s, proposed on %s (needs approvals)",
		rec.PromotionID, short(cur.Digest()), prev.Version, short(prev.Digest()), rec.VerifiedIn.PriorAcceptance.PromotionID, rb.Proposal.Branch)
	// Production keeps cur: the rollback is rejected, which closes the
	// attempt (the next proposal needs no --branch).
	const reason = "1.6.0 stays: the fix comes as 1.7.0"
	if _, err := d.tl(dir, 0, "promote", "reject", "--log-level", "warn", "--repo", dir, "--app", app, "--to", "production",
		"--branch", rb.Proposal.Branch, "--by", "platform-team", "--reason", reason); err != nil {
		return &stepError{"reject", err}
	}
	if _, err := d.git(dir, "fetch", "-q", "origin"); err != nil {
		return err
	}
	if rec, err = d.record(dir, "origin/"+rb.Proposal.Branch, "production"); err != nil {
		return &stepError{"reject", err}
	}
	if err := expect("reject", rec, promotion.Rejected); err != nil {
		return err
	}
	d.say("reject", "production: %s REJECTED (%q), production keeps %s", rec.PromotionID, reason, short(cur.Digest()))
	return nil
}

// finish writes the report and names the repository left behind.
func (d *demo) finish() error {
	if err := d.pull(); err != nil {
		return err
	}
	report := filepath.Join(d.cfg.Out, "report")
	if _, err := d.tl(d.work, 0, "report", "--log-level", "warn", "--repo", d.work, "--out", report); err != nil {
		return &stepError{"report", err}
	}
	index := filepath.Join(report, "index.html")
	if _, err := os.Stat(index); err != nil {
		return &stepError{"report", err}
	}
	d.say("report", "%s (throughline report: every app by environment, a page per promotion)", index)
	tip, err := d.git(d.work, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	d.say("repository", "%s (origin %s, main at %s): the README's \"Promote the verified digest\" commands run there", d.work, d.origin, short(tip))
	cache := filepath.Join(d.cfg.Out, "cache")
	next := fmt.Sprintf(`The repository make demo's walk left behind: %s (its origin: %s).

Production runs checkout 1.6.0; staging accepted 1.7.0 %s, not yet
proposed to production. The block under "Promote the verified digest" in
README.md promotes it: run it as it stands from the throughline checkout
(the directory holding bin/ and bin/demo-chain/).

The registry of the walk ended with it; its manifests and the verified
evidence bundles are cached in %s (the block exports it as
THROUGHLINE_CACHE_DIR), so that the gates re-verify the recorded evidence
offline. Production's approvers, alice and bob, sign with the throwaway
keys in %s.
`, d.work, d.origin, d.next.Digest(), cache, d.keys.dir)
	readme := filepath.Join(d.cfg.Out, "README.txt")
	if err := os.WriteFile(readme, []byte(next), 0o644); err != nil {
		return err
	}
	d.say("next", "%s: staging accepted %s %s, production runs 1.6.0: the README's \"Promote the verified digest\" block promotes it",
		readme, d.next.Version, short(d.next.Digest()))
	return nil
}

// stateOn checks env's record on origin/branch is in state want and says so.
func (d *demo) stateOn(dir, branch, env, step string, want promotion.State, what string) error {
	if _, err := d.git(dir, "fetch", "-q", "origin"); err != nil {
		return err
	}
	rec, err := d.record(dir, "origin/"+branch, env)
	if err != nil {
		return &stepError{step + " " + env, err}
	}
	if err := expect(step+" "+env, rec, want); err != nil {
		return err
	}
	tip, err := d.git(dir, "rev-parse", "origin/"+branch)
	if err != nil {
		return err
	}
	d.say(step, "%s: %s %s, commit %s", env, rec.PromotionID, what, short(tip))
	return nil
}

// openEvidence reads env's evidence file at main's tip in the work
// repository and checks its signature against the keys the policy's
// evidenceSigners lists for env (evidence.Open, as the gates do).
func (d *demo) openEvidence(env, file string) (*evidence.Record, error) {
	read := func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(d.work, filepath.FromSlash(p))) }
	signers, err := read(evidenceSignersFile)
	if err != nil {
		return nil, err
	}
	keys, err := evidence.ParseKeys(evidenceSignersFile, signers)
	if err != nil {
		return nil, err
	}
	data, err := read(file)
	if err != nil {
		return nil, err
	}
	sig, err := read(evidence.SignaturePath(file))
	if err != nil {
		return nil, fmt.Errorf("the evidence is not signed: %w", err)
	}
	return evidence.Open(file, env, data, sig, keys)
}
