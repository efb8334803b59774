package promote

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// candidateTrust is a trust policy block (indented for an environment)
// requiring the CI key's signature, provenance, an SBOM and a scan no
// older than maxAge with nothing above medium.
func candidateTrust(maxAge string) string {
	return `    trust:
      signatures: [{publicKey: keys/ci.pub}]
      attestations:
        provenance: {builders: ["` + trusttest.BuilderID + `"], sourceRepositories: ["` + trusttest.SourceRepo + `"]}
        sbom: {formats: [cyclonedx, spdx]}
        vulnerabilityScan: {maxSeverity: medium, maxAge: ` + maxAge + `}
`
}

// candidatePolicy is the example's registry in the promotion order dev ->
// staging -> production, each with a trust policy (devTrust for dev: ""
// for none); a scan may be 72 hours old in dev, 24 in production.
func candidatePolicy(devTrust string) string {
	return `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  dev:
    cluster: dev-eu-1
    paths: ["apps/*/overlays/dev"]
    namespaces: ["*-dev"]
` + devTrust + `  staging:
    cluster: staging-eu-1
    paths: ["apps/*/overlays/staging"]
    namespaces: ["*-staging"]
    promotesFrom: [dev]
` + candidateTrust("168h") + `  production:
    cluster: prod-eu-1
    paths: ["apps/*/overlays/production"]
    namespaces: ["*-production"]
    protected: true
    promotesFrom: [staging]
` + candidateTrust("24h")
}

// newCandidateFixture is the example repository with policy, the CI's
// public key of w and the example's image moved into w's registry.
func newCandidateFixture(t *testing.T, w *trusttest.World, policy string) *fixture {
	t.Helper()
	f := &fixture{t: t, top: t.TempDir()}
	f.root = filepath.Join(f.top, "gitops")
	copyDir(t, exampleRepo, f.root)
	must(t, filepath.Walk(filepath.Join(f.root, "apps"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "ghcr.io/throughline-dev/checkout", w.Host+"/checkout")), 0o644)
	}))
	f.write(map[string]string{promotion.PolicyFile: policy, "keys/ci.pub": string(w.Files["keys/ci.pub"])})
	f.git("init", "-q", "-b", "main")
	f.commit("the example, its image in the test registry")
	var err error
	f.repo, err = gitops.Open(context.Background(), f.root)
	must(t, err)
	return f
}

// ref is img with the tag 1.5.0, as CI names it: repository:tag@digest.
func ref(img name.Digest) string {
	return img.Context().String() + ":1.5.0@" + img.DigestStr()
}

// candidate makes image, built from commit, a candidate of dev.
func (f *fixture) candidate(w *trusttest.World, image, commit string) (*Proposal, error) {
	return Candidate(context.Background(), f.repo, CandidateRequest{App: "checkout", Environment: "dev", Image: image, SourceCommit: commit,
		Renderer: renderer, Trust: trust.Options{Now: w.Now}})
}

// TestCandidate: CI's image becomes dev's CANDIDATE with the verified
// evidence and the source commit, on an attempt branch with the digest
// pinned in dev's overlay; the same input again is the same attempt (no
// new commit); another digest is a new attempt.
func TestCandidate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := trusttest.New(t, true)
	f := newCandidateFixture(t, w, candidatePolicy(candidateTrust("72h")))
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	p, err := f.candidate(w, ref(img), trusttest.SourceCommit)
	must(t, err)
	rec := p.Record
	if p.Existing || rec.State != promotion.Candidate || rec.Target.Environment != "dev" || rec.Target.Cluster != "dev-eu-1" ||
		p.Branch != "throughline/promote/checkout/dev/"+trusttest.Hex(img)[:12]+"-1" || rec.Artifact.SourceCommit != trusttest.SourceCommit ||
		rec.Artifact.Image != ref(img) {
		t.Fatalf("candidate %+v, record %+v", p, rec)
	}
	ev := rec.Artifact.Evidence
	want := []string{trusttest.DigestOf(e.Sig), trusttest.DigestOf(e.Prov), trusttest.DigestOf(e.SBOM), trusttest.DigestOf(e.Scan)}
	if ev == nil || ev.Candidacy != rec.PromotionID || ev.Environment != "dev" || !slices.Equal(ev.Digests(), want) {
		t.Fatalf("evidence %+v, want candidacy %s in dev with %q", ev, rec.PromotionID, want)
	}
	if !strings.HasPrefix(ev.Manifest, "sha256:") {
		t.Fatalf("evidence %+v names no evidence manifest: later gates would fetch every bundle", ev)
	}
	// The scan's age and worst finding, read from the verified bundle, in
	// the record and sealed by the candidate commit's message.
	scan := ev.Items[3]
	if scan.ScanFinished != w.Now.Add(-2*time.Hour).UTC().Format(time.RFC3339) || scan.WorstSeverity != "medium" || scan.WorstFindings != 1 ||
		scan.Findings != 1 {
		t.Fatalf("the scan's summary %+v, want finished 2h before now, worst medium (1) of 1", scan)
	}
	for _, it := range ev.Items[:3] {
		if it.Scanned() {
			t.Errorf("a %s bundle with a scan summary: %+v", it.Kind, it)
		}
	}
	if msg := f.git("log", "-1", "--format=%B", p.Branch); !strings.Contains(msg, gate.SealScan+gate.ScanSeal(scan)+"\n") {
		t.Fatalf("the candidate commit does not seal the scan summary:\n%s", msg)
	}
	must(t, gate.SealedInGit(ctx, f.repo, p.Branch, rec))
	onBranch, err := promotion.ReadRecord(ctx, f.repo, p.Branch, "checkout", "dev")
	must(t, err)
	if onBranch == nil || !onBranch.Artifact.Equal(rec.Artifact) || onBranch.PromotionID != rec.PromotionID {
		t.Fatalf("the branch's record %+v", onBranch)
	}
	k, err := f.repo.ReadFile(ctx, p.Branch, "apps/checkout/overlays/dev/kustomization.yaml")
	must(t, err)
	if !strings.Contains(string(k), `newTag: "1.5.0@`+img.DigestStr()+`"`) {
		t.Fatalf("dev's overlay on %s does not pin the digest:\n%s", p.Branch, k)
	}
	tip := f.git("rev-parse", p.Branch)
	again, err := f.candidate(w, ref(img), trusttest.SourceCommit)
	must(t, err)
	if !again.Existing || again.Record.PromotionID != rec.PromotionID || again.Branch != p.Branch || f.git("rev-parse", p.Branch) != tip {
		t.Fatalf("the same input again: %+v (branch tip %s, was %s)", again, f.git("rev-parse", p.Branch), tip)
	}
	// Another digest, whose scan is too old for production but not for
	// dev: only dev's policy judges a candidate of dev.
	next := w.Image("checkout")
	ne := w.CIEvidence(next)
	ne.Scan = w.SignKey(w.Key, trusttest.Scan(next, w.Now.Add(-48*time.Hour), nil))
	w.Attach(next, ne.All()...)
	p2, err := f.candidate(w, ref(next), trusttest.SourceCommit)
	must(t, err)
	if p2.Existing || p2.Branch == p.Branch || p2.Record.Artifact.Evidence.Candidacy != p2.Record.PromotionID {
		t.Fatalf("another digest: %+v", p2)
	}
	// Production re-verifies exactly the recorded bundles with its own
	// policy: the first candidate's, not the second's (its scan is too old).
	reg, err := promotion.ReadRegistry(ctx, f.repo, "main")
	must(t, err)
	prod, err := trust.ForEnvironment(ctx, reg, "production", func(ctx context.Context, p string) ([]byte, error) { return f.repo.ReadFile(ctx, "main", p) })
	must(t, err)
	if _, err := trust.VerifyRecorded(ctx, prod, rec.Artifact.Image, ev.Digests(), trust.Options{Now: w.Now}); err != nil {
		t.Fatalf("production re-verifies the first candidate's evidence: %v", err)
	}
	_, err = trust.VerifyRecorded(ctx, prod, p2.Record.Artifact.Image, p2.Record.Artifact.Evidence.Digests(), trust.Options{Now: w.Now})
	wantCandidateRefusal(t, err, trust.RuleScanTooOld, ref(next), ne.Scan)
}

// TestCandidateWithoutTrust: an environment whose policy requires no
// evidence still gets its candidate, with an evidence reference that
// lists no bundle; the same digest claimed for another source commit is
// refused.
func TestCandidateWithoutTrust(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	f := newCandidateFixture(t, w, candidatePolicy(""))
	img := w.Image("checkout")
	p, err := f.candidate(w, ref(img), trusttest.SourceCommit)
	must(t, err)
	ev := p.Record.Artifact.Evidence
	if ev == nil || ev.Candidacy != p.Record.PromotionID || ev.Environment != "dev" || len(ev.Items) != 0 || ev.Items == nil ||
		p.Record.Artifact.SourceCommit != trusttest.SourceCommit {
		t.Fatalf("record %+v, evidence %+v", p.Record, ev)
	}
	_, err = f.candidate(w, ref(img), strings.Repeat("e", 40))
	wantCandidateRefusal(t, err, RuleCandidateSourceCommit, ref(img), nil)
}

// TestCandidateRefusals: what a careless or hostile CI step sends, each
// refused naming the rule, the image and (when there is one) the evidence.
func TestCandidateRefusals(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	f := newCandidateFixture(t, w, candidatePolicy(candidateTrust("72h")))
	other := w.Image("other")
	tests := []struct {
		name string
		env  string
		// evidence replaces bundles of CI's evidence; it returns the
		// bundle the refusal names (nil: none).
		evidence func(img name.Digest, e *trusttest.Evidence) []byte
		commit   string
		image    func(img name.Digest) string
		path     string
		code     int
		rule     string
	}{
		{name: "environment unknown", env: "qa", rule: "environment-unknown"},
		{name: "not a first environment", env: "staging", rule: gate.RuleCandidateNotFirst},
		{name: "protected, not first", env: "production", rule: gate.RuleCandidateNotFirst},
		{name: "unsigned", rule: trust.RuleSignatureMissing, evidence: func(_ name.Digest, e *trusttest.Evidence) []byte {
			*e = trusttest.Evidence{}
			return nil
		}},
		{name: "signed by another key", rule: trust.RuleSignatureInvalid, evidence: func(img name.Digest, e *trusttest.Evidence) []byte {
			e.Sig = w.SignKey(w.OtherKey, trusttest.Signature(img))
			return e.Sig
		}},
		{name: "provenance about another digest", rule: trust.RuleAttestationSubject, evidence: func(_ name.Digest, e *trusttest.Evidence) []byte {
			e.Prov = w.SignKey(w.Key, trusttest.Provenance(other, trusttest.BuilderID, trusttest.SourceRepo, trusttest.SourceCommit))
			return e.Prov
		}},
		{name: "provenance of another commit", rule: trust.RuleProvenanceSource, commit: strings.Repeat("f", 40),
			evidence: func(_ name.Digest, e *trusttest.Evidence) []byte { return e.Prov }},
		{name: "provenance by another builder", rule: trust.RuleProvenanceBuilder, evidence: func(img name.Digest, e *trusttest.Evidence) []byte {
			e.Prov = w.SignKey(w.Key, trusttest.Provenance(img, "https://attacker.example/builder", trusttest.SourceRepo, trusttest.SourceCommit))
			return e.Prov
		}},
		{name: "scan above the threshold", rule: trust.RuleScanFindings, evidence: func(img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-time.Hour), map[string]string{"CVE-2026-0002": "critical"}))
			return e.Scan
		}},
		{name: "scan too old for dev", rule: trust.RuleScanTooOld, evidence: func(img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-100*time.Hour), nil))
			return e.Scan
		}},
		{name: "dev's candidate in production's overlay", rule: "environment-mismatch", path: production},
		{name: "tag without digest", code: exitcode.Invalid, image: func(img name.Digest) string { return img.Context().String() + ":1.5.0" }},
		{name: "digest the registry does not have", rule: RuleImageUnknown, image: func(img name.Digest) string {
			return img.Context().String() + ":1.5.0@sha256:" + strings.Repeat("0", 64)
		}},
		{name: "source commit not a commit id", code: exitcode.Invalid, commit: "main"},
		// A registry that does not answer decides nothing: exit 5, try
		// again (never 1, never a refusal).
		{name: "registry unreachable", code: exitcode.Pending, image: func(img name.Digest) string {
			return closedPort(t) + "/checkout:1.5.0@" + img.DigestStr()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := w.Image("checkout")
			e := w.CIEvidence(img)
			var named []byte
			if tt.evidence != nil {
				named = tt.evidence(img, e)
			}
			w.Attach(img, e.All()...)
			image, commit, env := ref(img), trusttest.SourceCommit, "dev"
			if tt.image != nil {
				image = tt.image(img)
			}
			if tt.commit != "" {
				commit = tt.commit
			}
			if tt.env != "" {
				env = tt.env
			}
			before := f.git("for-each-ref")
			_, err := Candidate(context.Background(), f.repo, CandidateRequest{App: "checkout", Environment: env, Image: image, SourceCommit: commit,
				Path: tt.path, Renderer: renderer, Trust: trust.Options{Now: w.Now}})
			t.Log(err)
			if tt.code != 0 {
				if exitcode.Code(err) != tt.code {
					t.Fatalf("exit %d, want %d: %v", exitcode.Code(err), tt.code, err)
				}
			} else {
				wantCandidateRefusal(t, err, tt.rule, image, named)
			}
			if after := f.git("for-each-ref"); after != before {
				t.Fatalf("a refused candidate changed the repository's refs:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// wantCandidateRefusal checks that err is a refusal (exit 3) of rule
// naming image's digest and the evidence bundle (when not nil).
func wantCandidateRefusal(t *testing.T, err error, rule, image string, bundle []byte) {
	t.Helper()
	var r *exitcode.Refusal
	if !errors.As(err, &r) || exitcode.Code(err) != exitcode.Refused || r.Rule != rule {
		t.Fatalf("exit %d, want %d by rule %s: %v", exitcode.Code(err), exitcode.Refused, rule, err)
	}
	// The object is the image by digest, with or without its tag.
	_, digest, _ := strings.Cut(image, "@")
	if !strings.HasSuffix(r.Object, "@"+digest) || !strings.HasPrefix(r.Reason, rule) {
		t.Fatalf("the refusal does not name the image %s (its object) and the rule %s (its reason): %v", image, rule, err)
	}
	if bundle != nil && r.Field != "evidence "+trusttest.DigestOf(bundle) {
		t.Fatalf("the refusal does not name the evidence %s (its field): %v", trusttest.DigestOf(bundle), err)
	}
}

// closedPort is host:port of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestCandidateAfterHalt (issue 41, item 2): a HALTED candidacy never
// blocks the same digest: after its merge (dev's overlay already holds the
// digest) and a HALT, the same CI input makes attempt 2 on a new branch
// with a new record and its own candidacy evidence.
func TestCandidateAfterHalt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := trusttest.New(t, true)
	f := newCandidateFixture(t, w, candidatePolicy(candidateTrust("72h")))
	img := w.Image("checkout")
	w.Attach(img, w.CIEvidence(img).All()...)
	first, err := f.candidate(w, ref(img), trusttest.SourceCommit)
	must(t, err)
	f.git("merge", "-q", "--no-edit", first.Branch)
	rec, err := promotion.ReadRecord(ctx, f.repo, "main", "checkout", "dev")
	must(t, err)
	must(t, rec.Stop(promotion.Halted, "the rollout was denied", time.Now(), "notifier"))
	data, err := rec.Marshal()
	must(t, err)
	f.write(map[string]string{promotion.RecordPath("checkout", "dev"): string(data)})
	f.commit("promotion " + rec.PromotionID + " HALTED")
	again, err := f.candidate(w, ref(img), trusttest.SourceCommit)
	must(t, err)
	if again.Existing || again.Record.Attempt != 2 || again.Record.PromotionID == first.Record.PromotionID ||
		again.Branch != "throughline/promote/checkout/dev/"+trusttest.Hex(img)[:12]+"-2" || again.Record.State != promotion.Candidate {
		t.Fatalf("the same digest after the HALT: %+v", again)
	}
	if ev := again.Record.Artifact.Evidence; ev == nil || ev.Candidacy != again.Record.PromotionID {
		t.Fatalf("attempt 2's evidence %+v is not its own candidacy", ev)
	}
}
