package promote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

const (
	newDigest  = "sha256:4b7e2a91c3d5f6081726354a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"
	oldDigest  = "sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"
	renderer   = "v0.0.0-test"
	production = "apps/checkout/overlays/production"
)

var exampleRepo = filepath.Join("..", "examples", "gitops-env")

// fixture is the example environment in a Git repository (the GitOps root
// in a subdirectory) where staging accepted a digest production does not
// run yet.
type fixture struct {
	t         *testing.T
	top, root string
	repo      *gitops.Repo
	// notifier signs the evidence the fixture's notifier writes: the
	// policy lists it for dev, staging and production (evidenceSigners).
	notifier sshkey.Notifier
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return gittest.Run(f.t, f.top, args...)
}

// write writes files (GitOps-root-relative path -> content).
func (f *fixture) write(files map[string]string) {
	f.t.Helper()
	gittest.Write(f.t, f.root, files)
}

func (f *fixture) read(p string) string {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(p)))
	must(f.t, err)
	return string(data)
}

// commit commits every change of the work tree on the current branch.
func (f *fixture) commit(msg string) string {
	f.t.Helper()
	return gittest.Commit(f.t, f.top, msg, nil)
}

// amend adds a commit on branch made by change and returns to main.
func (f *fixture) amend(branch string, change func()) {
	f.t.Helper()
	f.git("checkout", "-q", branch)
	change()
	f.commit("edit")
	f.git("checkout", "-q", "main")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
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

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, top: t.TempDir()}
	f.root = filepath.Join(f.top, "gitops")
	copyDir(t, exampleRepo, f.root)
	testenv.RemoveTrust(t, f.root) // made-up digests, no evidence: the trust gates are trust_test.go's
	f.replace("apps/checkout/overlays/staging/kustomization.yaml", "1.4.2@"+oldDigest, "1.5.0@"+newDigest)
	f.useNotifier()
	gittest.Init(t, f.top)
	desired := f.commit("staging desires 1.5.0")
	f.stagingReconciling(desired)
	f.commit("staging RECONCILING")
	var err error
	f.repo, err = gitops.Open(context.Background(), f.root)
	must(t, err)
	f.acceptStaging(desired, time.Now())
	return f
}

func (f *fixture) propose() *Proposal {
	f.t.Helper()
	p, err := Propose(context.Background(), f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
	must(f.t, err)
	return p
}

func (f *fixture) check(head string, now time.Time) *gate.PromotionReport {
	f.t.Helper()
	rep, err := gate.CheckPromotion(context.Background(), f.repo, gate.Request{Base: "main", Head: head, Now: now, Renderer: renderer})
	must(f.t, err)
	if len(rep.Findings) != len(rep.Refusals) {
		f.t.Fatalf("%d findings for %d refusals", len(rep.Findings), len(rep.Refusals))
	}
	for i, fd := range rep.Findings {
		if fd.Reason != rep.Refusals[i] || fd.Rule == "" {
			f.t.Fatalf("finding %d %+v, refusal %q", i, fd, rep.Refusals[i])
		}
	}
	return rep
}

// rules lists the distinct rules of the report's findings, sorted.
func rules(rep *gate.PromotionReport) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range rep.Findings {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	sort.Strings(out)
	return out
}

// TestFlow: propose, the same request again, the gate refusing a
// CANDIDATE with typed findings, verify, approve, the gate passing, status
// and reconcile after the merge.
func TestFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.unsignedApprovals() // signed approvals: approvals_test.go
	p := f.propose()
	if p.Existing || p.Record.State != promotion.Candidate || p.Branch != "throughline/promote/checkout/production/4b7e2a91c3d5-1" ||
		p.Record.Target.Cluster != "prod-eu-1" {
		t.Fatalf("proposal %+v", p)
	}
	if again := f.propose(); !again.Existing || again.Record.PromotionID != p.Record.PromotionID {
		t.Fatalf("second proposal %+v", again)
	}
	rep := f.check(p.Branch, time.Now())
	if rep.OK || strings.Join(rules(rep), " ") != gate.RuleEvidence+" "+gate.RuleNotApproved {
		t.Fatalf("check of a candidate: %v %q", rules(rep), rep.Refusals)
	}
	now := time.Now()
	tr, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
	must(t, err)
	if tr.Record.State != promotion.Verified || tr.Branch != p.Branch || tr.Commit != f.git("rev-parse", p.Branch) {
		t.Fatalf("verified %+v", tr)
	}
	v, acc := tr.Record.VerifiedIn, f.git("log", "-1", "--format=%H", "main", "--", "gitops/"+f.evidencePath())
	if v.Environment != "staging" || v.RuntimeEvidence != f.evidencePath() || v.EvidenceCommit != acc || v.ObservedRevision != v.DesiredRevision {
		t.Fatalf("verifiedIn %+v, want the evidence %s at %s", v, f.evidencePath(), acc)
	}
	if msg := f.git("log", "-1", "--format=%B", p.Branch); !strings.Contains(msg, "Evidence: "+f.evidencePath()) || !strings.Contains(msg, "Evidence-Commit: "+acc) {
		t.Fatalf("the VERIFIED commit does not cite the evidence:\n%s", msg)
	}
	var re *exitcode.Refusal
	tr, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(2 * time.Hour), Now: now, Renderer: renderer})
	must(t, err)
	if tr.Record.State != promotion.Approved || tr.Record.Approval.Approver != "alice" {
		t.Fatalf("approved %+v", tr.Record)
	}
	if rep := f.check(p.Branch, time.Now()); !rep.OK || len(rep.Findings) != 0 {
		t.Fatalf("check of an approved promotion: %q", rep.Refusals)
	}
	if rep := f.check(p.Branch, time.Now().Add(3*time.Hour)); rep.OK || strings.Join(rules(rep), " ") != gate.RuleApprovalVoid {
		t.Fatalf("expired approval: %v %q", rules(rep), rep.Refusals)
	}
	rows, err := ledger.Status(ctx, f.repo, "")
	must(t, err)
	if len(rows) != 2 || rows[0].Environment != "production" || rows[0].State != promotion.Approved || rows[1].State != promotion.Accepted {
		t.Fatalf("status %+v", rows)
	}
	// Reconcile is refused before the merge, recorded after it.
	if _, _, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, Renderer: renderer}); !errors.As(err, &re) || re.Rule != RuleApproval {
		t.Fatalf("reconcile before the merge: %v", err)
	}
	f.git("merge", "-q", "--no-edit", p.Branch)
	tr, rev, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
	must(t, err)
	if tr.Record.State != promotion.Reconciling || tr.Record.Reconciling.DesiredRevision != rev || tr.Branch != "main" {
		t.Fatalf("reconciling %+v at %s", tr, rev)
	}
}

// TestCheckFindings: the bad PRs, each refused with its typed findings and
// the same text as before.
func TestCheckFindings(t *testing.T) {
	t.Parallel()
	kfile := production + "/kustomization.yaml"
	for _, tc := range []struct {
		name   string
		change func(f *fixture)
		rules  []string
		want   []string
	}{
		{"staging copied over production", func(f *fixture) {
			for _, n := range []string{"kustomization.yaml", "environment.yaml"} {
				f.write(map[string]string{production + "/" + n: f.read("apps/checkout/overlays/staging/" + n)})
			}
		}, []string{gate.RuleBoundary, gate.RuleCrossEnvironment, gate.RuleFile, gate.RuleParameter, gate.RuleRenderedHash},
			[]string{"boundary fields crossed", "environment.yaml changed", "namespace changed", "cross-environment object"}},
		{"digest not the verified one", func(f *fixture) {
			f.write(map[string]string{kfile: strings.Replace(f.read(kfile), newDigest, "sha256:"+strings.Repeat("7", 64), 1)})
		}, []string{gate.RuleDigest, gate.RuleRenderedHash}, []string{"digest not the verified one " + newDigest, "is not the one proposed and approved"}},
		{"moved tag", func(f *fixture) {
			rec := func(d, at string) string {
				return `{"apiVersion":"throughline.dev/v1alpha1","kind":"TagResolution","reference":"ghcr.io/throughline-dev/checkout:1.5.0",` +
					`"repository":"ghcr.io/throughline-dev/checkout","tag":"1.5.0","registry":"ghcr.io","digest":"` + d + `","resolvedAt":"` + at + `"}`
			}
			f.write(map[string]string{"drift/staging.json": rec(newDigest, "2026-11-01T00:00:00Z"), "drift/production.json": rec(oldDigest, "2026-11-02T00:00:00Z")})
		}, []string{gate.RuleFile, gate.RuleMovedTag}, []string{"moved tag: ", "drift/production.json"}},
		{"replicas changed without policy", func(f *fixture) {
			f.write(map[string]string{kfile: strings.Replace(f.read(kfile), "count: 6", "count: 8", 1)})
		}, []string{gate.RuleParameter, gate.RuleRenderedHash}, []string{"replicas changed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			p := f.propose()
			f.amend(p.Branch, func() { tc.change(f) })
			rep := f.check(p.Branch, time.Now())
			got := rules(rep)
			// Every case is also a CANDIDATE: no evidence, no approval.
			want := append([]string{gate.RuleEvidence, gate.RuleNotApproved}, tc.rules...)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("rules %v, want %v\n%s", got, want, strings.Join(rep.Refusals, "\n"))
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.Join(rep.Refusals, "\n"), w) {
					t.Errorf("refusals do not say %q:\n%s", w, strings.Join(rep.Refusals, "\n"))
				}
			}
		})
	}
}

// TestCheckWithoutRecord: a change that carries no record is no
// promotion: the repository check judges it (a README passes; staging
// copied over production is refused, its differences named).
func TestCheckWithoutRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.git("checkout", "-q", "-b", "no-record")
	f.write(map[string]string{"README.md": "hello\n"})
	f.commit("no record")
	f.git("checkout", "-q", "-b", "copied", "main")
	for _, n := range []string{"kustomization.yaml", "environment.yaml"} {
		f.write(map[string]string{production + "/" + n: f.read("apps/checkout/overlays/staging/" + n)})
	}
	f.commit("staging copied over production")
	f.git("checkout", "-q", "main")
	if rep := f.check("no-record", time.Now()); !rep.OK || rep.Repository == nil || len(rep.Changes) != 0 {
		t.Fatalf("README only: %+v", rep)
	}
	rep := f.check("copied", time.Now())
	all := strings.Join(rep.Refusals, "\n")
	if rep.OK || rep.Repository == nil || strings.Join(rules(rep), " ") != gate.RuleProtected ||
		!strings.Contains(all, "metadata.namespace: checkout-production -> checkout-staging") || !strings.Contains(all, "spec.replicas: 6 -> 2") {
		t.Fatalf("staging copied over production: %v\n%s", rules(rep), all)
	}
}

// TestProposeRefusals: nothing ACCEPTED in the source; a source record
// that cannot be used is invalid input.
func TestProposeRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	record := errorLines(t, "testdata/propose-refusals.golden", 2)
	_, err := Propose(ctx, f.repo, ProposeRequest{App: "checkout", From: "dev", To: "production", Path: production, Renderer: renderer})
	refusedBy(t, err, RulePromotion)
	record("no source record", err)
	file := promotion.RecordPath("checkout", "staging")
	f.write(map[string]string{file: strings.Replace(f.read(file), "promotion/v1", "promotion/v2", 1)})
	f.commit("v2")
	_, err = Propose(ctx, f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
	var rerr *promotion.RecordError
	if exitcode.Code(err) != exitcode.Invalid || !errors.As(err, &rerr) || rerr.File != file || rerr.Field != "schemaVersion" {
		t.Fatalf("future schemaVersion: %v, want invalid input, a record error of %s schemaVersion", err, file)
	}
	record("future schemaVersion", err)
}

// TestStatusOddFileNames: files under promotion/ whose names hold spaces,
// or are no record's, are neither read nor split into other names.
func TestStatusOddFileNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(map[string]string{
		"promotion/my app/production.yaml":    "not a record\n",
		"promotion/checkout/pro duction.yaml": "not a record\n",
		"promotion/checkout/notes.txt":        "not a record\n",
	})
	f.commit("odd names")
	rows, err := ledger.Status(context.Background(), f.repo, "")
	must(t, err)
	if len(rows) != 1 || rows[0].App != "checkout" || rows[0].Environment != "staging" || rows[0].State != promotion.Accepted || rows[0].Ref != "main" {
		t.Fatalf("status %+v", rows)
	}
	if rows, err := ledger.Status(context.Background(), f.repo, "other"); err != nil || len(rows) != 0 {
		t.Fatalf("status of another app: %+v %v", rows, err)
	}
}

// TestAttemptBranch: the only open attempt branch, none, or several.
func TestAttemptBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	record := errorLines(t, "testdata/attempt-branch.golden", 2)
	_, err := AttemptBranch(ctx, f.repo, "", "checkout", "production")
	if exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("no branch: %v", err)
	}
	record("no branch", err)
	p := f.propose()
	if b, err := AttemptBranch(ctx, f.repo, "", "checkout", "production"); err != nil || b != p.Branch {
		t.Fatalf("one branch: %s %v", b, err)
	}
	f.git("branch", p.Branch+"x")
	_, err = AttemptBranch(ctx, f.repo, "", "checkout", "production")
	if exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("several branches: %v", err)
	}
	record("several branches", err) // both named, in the golden file
	if b, err := AttemptBranch(ctx, f.repo, "given", "checkout", "production"); err != nil || b != "given" {
		t.Fatalf("given: %s %v", b, err)
	}
}

// TestCheckVerifiedInIsProven: the gate reads the source's evidence from
// Git at the base, as verify does: a VERIFIED record whose verifiedIn was
// edited on the branch (another observed revision, another evidence file)
// is refused even when it is approved after the edit.
func TestCheckVerifiedInIsProven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(v *promotion.VerifiedIn)
		want string
	}{
		{"observed revision", func(v *promotion.VerifiedIn) { v.ObservedRevision = strings.Repeat("e", 40) }, "is not what the evidence in Git proves"},
		{"evidence file", func(v *promotion.VerifiedIn) { v.RuntimeEvidence = "evidence/staging/checkout/forged.json" },
			"is not what the evidence in Git proves"},
		{"source environment", func(v *promotion.VerifiedIn) { v.Environment = "dev" }, "no runtime evidence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.unsignedApprovals() // signed approvals: approvals_test.go
			p := f.propose()
			now := time.Now()
			_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
			must(t, err)
			file := promotion.RecordPath("checkout", "production")
			f.amend(p.Branch, func() {
				rec, err := promotion.Parse(file, []byte(f.read(file)))
				must(t, err)
				tc.edit(rec.VerifiedIn)
				data, err := rec.Marshal()
				must(t, err)
				f.write(map[string]string{file: string(data)})
			})
			_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(time.Hour), Now: now,
				Renderer: renderer})
			must(t, err)
			rep := f.check(p.Branch, now)
			if !slices.Contains(rules(rep), gate.RuleEvidence) || !strings.Contains(strings.Join(rep.Refusals, "\n"), tc.want) {
				t.Fatalf("rules %v, want %s saying %q:\n%s", rules(rep), gate.RuleEvidence, tc.want, strings.Join(rep.Refusals, "\n"))
			}
		})
	}
}

// TestCheckReadsThePolicyAtTheBase: a promotion PR that also edits the
// policy to allow its own parameter change is judged by the base's policy.
func TestCheckReadsThePolicyAtTheBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := f.propose()
	kfile := production + "/kustomization.yaml"
	f.amend(p.Branch, func() {
		f.write(map[string]string{
			kfile:                f.read(kfile) + "\ncommonAnnotations:\n  team: checkout\n",
			promotion.PolicyFile: strings.Replace(f.read(promotion.PolicyFile), "allowParameters: []", "allowParameters: [commonAnnotations]", 1),
		})
	})
	rep := f.check(p.Branch, time.Now())
	got := rules(rep)
	if !slices.Contains(got, gate.RuleParameter) || !slices.Contains(got, gate.RuleFile) {
		t.Fatalf("rules %v, want %s (the base's policy) and %s (the policy changed):\n%s", got, gate.RuleParameter, gate.RuleFile, strings.Join(rep.Refusals, "\n"))
	}
}

// refusedBy fails t unless err is a refusal (exit 3) of rule, and returns
// (a copy of) it: a test asserts on its fields, the golden file on its
// wording.
func refusedBy(t *testing.T, err error, rule string) exitcode.Refusal {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || re.Rule != rule || exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("want a refusal by %s (exit %d), got exit %d: %v", rule, exitcode.Refused, exitcode.Code(err), err)
	}
	return *re
}

// invalidFile fails t unless err is invalid input (exit 4) naming file.
func invalidFile(t *testing.T, err error, file string) {
	t.Helper()
	var ii *exitcode.InvalidInput
	if !errors.As(err, &ii) || ii.File != file || exitcode.Code(err) != exitcode.Invalid {
		t.Fatalf("want invalid input naming %s (exit %d), got exit %d: %v", file, exitcode.Invalid, exitcode.Code(err), err)
	}
}

// errorLines is golden.ErrorLines with, after replace, the values of the
// run written <commit>, <time> and <age> in every message: the fixtures'
// commits and evidence times differ from run to run, and refusals name them.
func errorLines(t *testing.T, file string, cases int, replace ...string) func(name string, err error) {
	t.Helper()
	record := golden.ErrorLines(t, file, cases)
	return func(name string, err error) { record(name, withoutRunValues(redacted(err, replace...))) }
}

// withoutRunValues is err with the commit ids in its message (full, or
// short after "at", "of" or "commit"), its timestamps, ages and key
// fingerprints written <commit>, <time>, <age> and <key>.
func withoutRunValues(err error) error {
	if err == nil {
		return nil
	}
	msg := commitID.ReplaceAllString(err.Error(), "<commit>")
	msg = shortCommit.ReplaceAllString(msg, "$1 <commit>")
	msg = timestamp.ReplaceAllString(msg, "<time>")
	msg = keyFingerprint.ReplaceAllString(msg, "<key>")
	return errors.New(age.ReplaceAllString(msg, "<age> ago"))
}

var (
	commitID    = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	shortCommit = regexp.MustCompile(`\b(at|of|commit) [0-9a-f]{12}\b`)
	// keyFingerprint is an SSH key's (the tests make their keys).
	keyFingerprint = regexp.MustCompile(`SHA256:[A-Za-z0-9+/]{43}`)
	timestamp      = regexp.MustCompile(`\b(\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\d(\.\d+)?Z`)
	age            = regexp.MustCompile(`\b(\d+h)?(\d+m)?[\d.]+s ago\b`)
)

// redacted is err with each old, new pair of replace applied to its
// message, for a golden file (digests and addresses of the run).
func redacted(err error, replace ...string) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.NewReplacer(replace...).Replace(err.Error()))
}
