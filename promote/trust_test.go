package promote

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

const (
	stagingScanAge    = 168 * time.Hour // the example's staging maxAge
	productionScanAge = 24 * time.Hour  // the example's production maxAge
	artifactRepo      = "ghcr.io/throughline-dev/checkout"
)

// trustFixture is the example environment (fixture) whose staging record
// ACCEPTED newDigest with supply-chain evidence recorded at candidacy, the
// bundles in a real registry, and the example's trust policies (staging:
// scans up to 168h, production: 24h) on main, approvals unsigned.
type trustFixture struct {
	*fixture
	w *trusttest.World
	// img is the artifact in w's registry (the repository path of
	// artifactRepo, digest newDigest): what the bundles are about.
	img  name.Digest
	opts trust.Options
	// staging and production are the trust policies on main.
	staging, production *v1alpha1.TrustPolicy
}

// newTrustFixture attaches bundles next to the artifact and records
// record (bundles by digest; nil: no evidence) in staging's record.
func newTrustFixture(t *testing.T, production *v1alpha1.TrustPolicy, attach, record func(tf *trustFixture) [][]byte) *trustFixture {
	t.Helper()
	w := trusttest.New(t, false)
	img, err := name.NewDigest(w.Host + "/throughline-dev/checkout@" + newDigest)
	must(t, err)
	tf := &trustFixture{fixture: newFixture(t), w: w, img: img, staging: trusttest.KeyPolicy(stagingScanAge), production: production,
		opts: trust.Options{Transport: w.As(), CacheDir: t.TempDir()}}
	w.AttachTag(img, ".att", attach(tf)...)
	var sc *promotion.SupplyChain
	if b := record(tf); b != nil {
		sc = supplyChain(b)
	}
	tf.rewriteAcceptance(func(m map[string]string) { m["record"] = withArtifact(t, m["record"], sc) })
	tf.unsignedApprovals()
	for p, data := range w.Files {
		tf.write(map[string]string{p: string(data)})
	}
	tf.setTrust(tf.production)
	return tf
}

// supplyChain references bundles as promote candidate records them.
func supplyChain(bundles [][]byte) *promotion.SupplyChain {
	sc := &promotion.SupplyChain{Candidacy: promotion.AttemptKey{App: "checkout", Digest: newDigest, Environment: "staging", Attempt: 1}.ID(),
		Environment: "staging", Items: []promotion.EvidenceItem{}}
	for _, b := range bundles {
		kind, pt := kindOf(b)
		sc.Items = append(sc.Items, promotion.EvidenceItem{Kind: kind, Digest: trusttest.DigestOf(b), PredicateType: pt, Signer: "publicKey keys/ci.pub"})
	}
	return sc
}

// kindOf is the evidence kind and predicate type bundle b claims.
func kindOf(b []byte) (kind, predicateType string) {
	var doc struct {
		DSSE struct {
			Payload []byte `json:"payload"`
		} `json:"dsseEnvelope"`
	}
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if json.Unmarshal(b, &doc) != nil || json.Unmarshal(doc.DSSE.Payload, &st) != nil {
		return "signature", ""
	}
	switch st.PredicateType {
	case trusttest.PredicateSignature:
		return "signature", ""
	case trusttest.PredicateSLSAProvenance:
		return "provenance", st.PredicateType
	case trusttest.PredicateVulns:
		return "vulnerability-scan", st.PredicateType
	}
	return "sbom", st.PredicateType
}

// withArtifact is the record text with the CI's source commit and sc as
// its artifact's evidence.
func withArtifact(t *testing.T, text string, sc *promotion.SupplyChain) string {
	rec, err := promotion.Parse("record", []byte(text))
	must(t, err)
	rec.Artifact.SourceCommit, rec.Artifact.Evidence = trusttest.SourceCommit, sc
	data, err := rec.Marshal()
	must(t, err)
	return string(data)
}

// setTrust commits the policy on main with production's trust policy
// (nil: none) and staging's.
func (tf *trustFixture) setTrust(production *v1alpha1.TrustPolicy) {
	tf.t.Helper()
	out, err := testenv.WithoutTrust([]byte(tf.read(promotion.PolicyFile)))
	must(tf.t, err)
	doc, err := kyaml.Parse(string(out))
	must(tf.t, err)
	for env, tp := range map[string]*v1alpha1.TrustPolicy{"staging": tf.staging, "production": production} {
		if tp == nil {
			continue
		}
		y, err := sigyaml.Marshal(tp)
		must(tf.t, err)
		node, err := kyaml.Parse(string(y))
		must(tf.t, err)
		_, err = doc.Pipe(kyaml.Lookup("environments", env), kyaml.SetField("trust", node))
		must(tf.t, err)
	}
	s, err := doc.String()
	must(tf.t, err)
	tf.write(map[string]string{promotion.PolicyFile: s})
	if tf.git("status", "--porcelain") != "" {
		tf.commit("production trust policy")
	}
}

func (tf *trustFixture) proposeReq() ProposeRequest {
	return ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer, Trust: tf.opts}
}

func (tf *trustFixture) verifyReq(now time.Time) VerifyRequest {
	return VerifyRequest{App: "checkout", To: "production", Now: now, Trust: tf.opts}
}

// verifiedAndApproved proposes, verifies and approves the production
// attempt with production's trust policy lifted, then restores it: what
// the PR gate judges is the record's evidence against the base's policy.
func (tf *trustFixture) verifiedAndApproved() *Proposal {
	tf.t.Helper()
	ctx := context.Background()
	tf.setTrust(nil)
	p, err := Propose(ctx, tf.repo, tf.proposeReq())
	must(tf.t, err)
	now := time.Now()
	_, err = Verify(ctx, tf.repo, tf.verifyReq(now))
	must(tf.t, err)
	_, err = Approve(ctx, tf.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(2 * time.Hour), Now: now,
		Renderer: renderer})
	must(tf.t, err)
	tf.setTrust(tf.production)
	return p
}

func (tf *trustFixture) checkReq(head string, now time.Time) gate.Request {
	return gate.Request{Base: "main", Head: head, Now: now, Renderer: renderer, Trust: tf.opts}
}

// image is the artifact as the refusals name it.
const image = artifactRepo + "@" + newDigest

// wantTrustRefusal fails unless err is a refusal (exit 3) of rule naming
// the image (its Object), the rule (its Reason begins with it) and, when
// given, the evidence digest (its Field).
func wantTrustRefusal(t *testing.T, gate string, err error, rule, evidence string) exitcode.Refusal {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused || re.Rule != rule || re.Object != image ||
		!strings.HasPrefix(re.Reason, rule) || evidence != "" && re.Field != "evidence "+evidence {
		t.Fatalf("%s: want refusal %s naming %s and evidence %q, got exit %d: %v", gate, rule, image, evidence, exitcode.Code(err), err)
	}
	return *re
}

// wantFinding fails unless rep lists a finding of rule naming the image
// and, when given, the evidence digest.
func wantFinding(t *testing.T, rep *gate.PromotionReport, rule, evidence string) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Rule == rule && strings.Contains(f.Reason, image) && (evidence == "" || strings.Contains(f.Reason, "evidence "+evidence)) {
			if rep.OK {
				t.Fatal("a report with findings is OK")
			}
			return
		}
	}
	t.Fatalf("check: no finding %s naming %s and evidence %q: %v\n%s", rule, image, evidence, rules(rep), strings.Join(rep.Refusals, "\n"))
}

// trustAttack is evidence a careless or hostile CI or contributor records
// for the artifact, and what every gate into production must refuse.
type trustAttack struct {
	name string
	// production is production's trust policy (nil: the example's).
	production *v1alpha1.TrustPolicy
	// edit changes the CI's bundles (attached and recorded); record, when
	// set, is what staging's record references instead.
	edit   func(tf *trustFixture, e *trusttest.Evidence)
	record func(tf *trustFixture, e *trusttest.Evidence) [][]byte
	rule   string
	// blame is the bundle the refusal names (nil: none).
	blame func(e *trusttest.Evidence) []byte
}

func trustAttacks() []trustAttack {
	otherCommit := strings.Repeat("f", 40)
	return []trustAttack{
		{name: "no evidence recorded", record: func(*trustFixture, *trusttest.Evidence) [][]byte { return nil },
			rule: gate.RuleEvidenceUnrecorded},
		{name: "no signature recorded", edit: func(_ *trustFixture, e *trusttest.Evidence) { e.Sig = nil }, rule: trust.RuleSignatureMissing},
		{name: "tampered signature", edit: func(tf *trustFixture, e *trusttest.Evidence) { e.Sig = tamper(tf.t, e.Sig) }, rule: trust.RuleSignatureInvalid,
			blame: func(e *trusttest.Evidence) []byte { return e.Sig }},
		{name: "signature by another key", edit: func(tf *trustFixture, e *trusttest.Evidence) {
			e.Sig = tf.w.SignKey(tf.w.OtherKey, trusttest.Signature(tf.img))
		}, rule: trust.RuleSignatureInvalid, blame: func(e *trusttest.Evidence) []byte { return e.Sig }},
		{name: "keyless signature by another identity", production: trusttest.KeylessPolicy(productionScanAge),
			edit: func(tf *trustFixture, e *trusttest.Evidence) {
				*e = *tf.w.KeylessEvidence(tf.img, "https://github.com/attacker/fork/.github/workflows/release.yaml@refs/heads/main", trusttest.CIIssuer)
			}, rule: trust.RuleSignatureIdentity, blame: func(e *trusttest.Evidence) []byte { return e.Sig }},
		{name: "provenance about another digest", edit: func(tf *trustFixture, e *trusttest.Evidence) {
			other := tf.img.Context().Digest("sha256:" + strings.Repeat("7", 64))
			e.Prov = tf.w.SignKey(tf.w.Key, trusttest.Provenance(other, trusttest.BuilderID, trusttest.SourceRepo, trusttest.SourceCommit))
		}, rule: trust.RuleAttestationSubject, blame: func(e *trusttest.Evidence) []byte { return e.Prov }},
		{name: "provenance from another source commit", edit: func(tf *trustFixture, e *trusttest.Evidence) {
			e.Prov = tf.w.SignKey(tf.w.Key, trusttest.Provenance(tf.img, trusttest.BuilderID, trusttest.SourceRepo, otherCommit))
		}, rule: trust.RuleProvenanceSource, blame: func(e *trusttest.Evidence) []byte { return e.Prov }},
		{name: "provenance by another builder", edit: func(tf *trustFixture, e *trusttest.Evidence) {
			e.Prov = tf.w.SignKey(tf.w.Key, trusttest.Provenance(tf.img, "https://ci.attacker.example/builder", trusttest.SourceRepo,
				trusttest.SourceCommit))
		}, rule: trust.RuleProvenanceBuilder, blame: func(e *trusttest.Evidence) []byte { return e.Prov }},
		{name: "scan too old for production, fine for staging", edit: func(tf *trustFixture, e *trusttest.Evidence) {
			e.Scan = tf.w.SignKey(tf.w.Key, trusttest.Scan(tf.img, time.Now().Add(-48*time.Hour), nil))
		}, rule: trust.RuleScanTooOld, blame: func(e *trusttest.Evidence) []byte { return e.Scan }},
		{name: "scan with a critical finding", edit: func(tf *trustFixture, e *trusttest.Evidence) {
			e.Scan = tf.w.SignKey(tf.w.Key, trusttest.Scan(tf.img, time.Now().Add(-time.Hour), map[string]string{"CVE-2026-9999": "9.8"}))
		}, rule: trust.RuleScanFindings, blame: func(e *trusttest.Evidence) []byte { return e.Scan }},
		{name: "recorded bundle the registry lost", record: func(_ *trustFixture, e *trusttest.Evidence) [][]byte {
			return append(e.All(), []byte("a bundle never pushed"))
		}, rule: trust.RuleEvidenceMissing, blame: func(*trusttest.Evidence) []byte { return []byte("a bundle never pushed") }},
	}
}

// tamper is bundle b with one byte of its signed payload changed.
func tamper(t *testing.T, b []byte) []byte {
	var doc map[string]any
	must(t, json.Unmarshal(b, &doc))
	env := doc["dsseEnvelope"].(map[string]any)
	payload, err := base64.StdEncoding.DecodeString(env["payload"].(string))
	must(t, err)
	payload = bytes.Replace(payload, []byte(`"predicate"`), []byte(`"predicatf"`), 1)
	env["payload"] = base64.StdEncoding.EncodeToString(payload)
	out, err := json.Marshal(doc)
	must(t, err)
	return out
}

// newAttack is the trust fixture of a.
func newAttack(t *testing.T, a trustAttack) (*trustFixture, *trusttest.Evidence) {
	prod := a.production
	if prod == nil {
		prod = trusttest.KeyPolicy(productionScanAge)
	}
	var e *trusttest.Evidence
	tf := newTrustFixture(t, prod, func(tf *trustFixture) [][]byte {
		e = tf.w.CIEvidence(tf.img)
		if a.edit != nil {
			a.edit(tf, e)
		}
		return e.All()
	}, func(tf *trustFixture) [][]byte {
		if a.record != nil {
			return a.record(tf, e)
		}
		return e.All()
	})
	return tf, e
}

func (a trustAttack) evidence(e *trusttest.Evidence) string {
	if a.blame == nil {
		return ""
	}
	return trusttest.DigestOf(a.blame(e))
}

// TestProposeReverifiesEvidence: propose into production re-verifies the
// evidence staging's record carries, by its recorded digests, against
// production's trust policy at the base, and refuses every attack.
func TestProposeReverifiesEvidence(t *testing.T) {
	t.Parallel()
	for _, a := range trustAttacks() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			tf, e := newAttack(t, a)
			_, err := Propose(context.Background(), tf.repo, tf.proposeReq())
			wantTrustRefusal(t, "propose", err, a.rule, a.evidence(e))
		})
	}
}

// TestVerifyReverifiesEvidence: an attempt proposed while production
// required nothing is refused at VERIFIED once the base's policy requires
// evidence the record's does not satisfy.
func TestVerifyReverifiesEvidence(t *testing.T) {
	t.Parallel()
	for _, a := range trustAttacks() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			tf, e := newAttack(t, a)
			tf.setTrust(nil)
			_, err := Propose(context.Background(), tf.repo, tf.proposeReq())
			must(t, err)
			tf.setTrust(tf.production)
			_, err = Verify(context.Background(), tf.repo, tf.verifyReq(time.Now()))
			wantTrustRefusal(t, "verify", err, a.rule, a.evidence(e))
		})
	}
}

// TestCheckReverifiesEvidence: the PR gate re-verifies the record's
// evidence against the base's trust policy and lists the refusal.
func TestCheckReverifiesEvidence(t *testing.T) {
	t.Parallel()
	for _, a := range trustAttacks() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			tf, e := newAttack(t, a)
			p := tf.verifiedAndApproved()
			rep, err := gate.CheckPromotion(context.Background(), tf.repo, tf.checkReq(p.Branch, time.Now()))
			must(t, err)
			wantFinding(t, rep, a.rule, a.evidence(e))
		})
	}
}

// TestGatesCarryAndReverifyTheSameEvidence: with the CI's evidence,
// propose, verify, approve and the PR gate pass into production; the new
// record carries staging's evidence as recorded at candidacy (not copied
// from elsewhere, not rebuilt); a warm gate makes no registry request;
// a record whose evidence a contributor edits on the branch (a fresher scan
// attached later, or none) or whose source commit they edit is refused by
// the PR gate.
func TestGatesCarryAndReverifyTheSameEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var e *trusttest.Evidence
	all := func(tf *trustFixture) [][]byte {
		if e == nil {
			e = tf.w.CIEvidence(tf.img)
		}
		return e.All()
	}
	tf := newTrustFixture(t, trusttest.KeyPolicy(productionScanAge), all, all)
	p, err := Propose(ctx, tf.repo, tf.proposeReq())
	must(t, err)
	src, err := promotion.ReadRecord(ctx, tf.repo, "main", "checkout", "staging")
	must(t, err)
	if !p.Record.Artifact.Equal(src.Artifact) || p.Record.Artifact.Evidence == nil || len(p.Record.Artifact.Evidence.Items) != 4 {
		t.Fatalf("the production record's artifact %+v is not staging's %+v", p.Record.Artifact, src.Artifact)
	}
	now := time.Now()
	_, err = Verify(ctx, tf.repo, tf.verifyReq(now))
	must(t, err)
	_, err = Approve(ctx, tf.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(2 * time.Hour), Now: now,
		Renderer: renderer})
	must(t, err)
	before := tf.w.Requests.Load()
	rep, err := gate.CheckPromotion(ctx, tf.repo, tf.checkReq(p.Branch, now))
	must(t, err)
	if !rep.OK {
		t.Fatalf("check: %v\n%s", rules(rep), strings.Join(rep.Refusals, "\n"))
	}
	if n := tf.w.Requests.Load() - before; n != 0 {
		t.Fatalf("the warm PR gate made %d registry requests for evidence verified before, want 0", n)
	}
	// Later, the scan is too old for production: the PR gate says so.
	rep, err = gate.CheckPromotion(ctx, tf.repo, tf.checkReq(p.Branch, now.Add(productionScanAge)))
	must(t, err)
	wantFinding(t, rep, trust.RuleScanTooOld, trusttest.DigestOf(e.Scan))

	fresh := tf.w.SignKey(tf.w.Key, trusttest.Scan(tf.img, time.Now(), nil))
	tf.w.AttachTag(tf.img, ".att", append(e.All(), fresh)...)
	for name, tc := range map[string]struct {
		edit func(rec *promotion.Record)
		rule string
	}{
		"a fresher scan swapped in": {func(rec *promotion.Record) { rec.Artifact.Evidence.Items[3].Digest = trusttest.DigestOf(fresh) }, gate.RuleEvidenceDiffers},
		"the evidence dropped":      {func(rec *promotion.Record) { rec.Artifact.Evidence = nil }, gate.RuleEvidenceDiffers},
		"another source commit":     {func(rec *promotion.Record) { rec.Artifact.SourceCommit = strings.Repeat("f", 40) }, trust.RuleProvenanceSource},
	} {
		t.Run(name, func(t *testing.T) {
			b := "edited-" + strings.ReplaceAll(name, " ", "-")
			tf.git("branch", b, p.Branch)
			file := promotion.RecordPath("checkout", "production")
			tf.amend(b, func() {
				rec, err := promotion.Parse(file, []byte(tf.read(file)))
				must(t, err)
				tc.edit(rec)
				data, err := rec.Marshal()
				must(t, err)
				tf.write(map[string]string{file: string(data)})
			})
			rep, err := gate.CheckPromotion(ctx, tf.repo, tf.checkReq(b, now))
			must(t, err)
			if !slices.Contains(rules(rep), tc.rule) {
				t.Fatalf("check: no %s finding: %v\n%s", tc.rule, rules(rep), strings.Join(rep.Refusals, "\n"))
			}
		})
	}
}

// TestVerifyRefusesEditedEvidence: a contributor who edits the attempt's
// record on its branch to reference other evidence than staging's record
// (a fresher scan attached later, which verifies) is refused at VERIFIED.
func TestVerifyRefusesEditedEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var e *trusttest.Evidence
	all := func(tf *trustFixture) [][]byte {
		if e == nil {
			e = tf.w.CIEvidence(tf.img)
		}
		return e.All()
	}
	tf := newTrustFixture(t, trusttest.KeyPolicy(productionScanAge), all, all)
	p, err := Propose(ctx, tf.repo, tf.proposeReq())
	must(t, err)
	fresh := tf.w.SignKey(tf.w.Key, trusttest.Scan(tf.img, time.Now(), nil))
	tf.w.AttachTag(tf.img, ".att", append(e.All(), fresh)...)
	file := promotion.RecordPath("checkout", "production")
	tf.amend(p.Branch, func() {
		rec, err := promotion.Parse(file, []byte(tf.read(file)))
		must(t, err)
		rec.Artifact.Evidence.Items[3].Digest = trusttest.DigestOf(fresh)
		data, err := rec.Marshal()
		must(t, err)
		tf.write(map[string]string{file: string(data)})
	})
	_, err = Verify(ctx, tf.repo, tf.verifyReq(time.Now()))
	// Only the swapped scan is named (its field), not the whole list.
	if re := wantTrustRefusal(t, "verify", err, gate.RuleEvidenceDiffers, ""); re.File != file || re.Field != "evidence "+trusttest.DigestOf(fresh) {
		t.Fatalf("verify: %v, want a refusal of %s naming the branch's scan %s", err, file, trusttest.DigestOf(fresh))
	}
	// Both evidence digests named: the golden file.
	errorLines(t, "testdata/evidence-differs.golden", 1)("a scan swapped on the branch",
		redacted(err, trusttest.DigestOf(fresh), "<the branch's scan>", trusttest.DigestOf(e.Scan), "<the recorded scan>"))
}

// TestCheckReportsEveryBadBundle (issue 33, messages): a record whose
// signature and scan were both signed by a rogue key gets one finding for
// each bundle at the PR gate, and promote propose refuses both: not only
// the first.
func TestCheckReportsEveryBadBundle(t *testing.T) {
	t.Parallel()
	a := trustAttack{name: "a rogue signature and scan", edit: func(tf *trustFixture, e *trusttest.Evidence) {
		e.Sig = tf.w.SignKey(tf.w.OtherKey, trusttest.Signature(tf.img))
		e.Scan = tf.w.SignKey(tf.w.OtherKey, trusttest.Scan(tf.img, time.Now().Add(-time.Hour), nil))
	}}
	tf, e := newAttack(t, a)
	p := tf.verifiedAndApproved()
	rep, err := gate.CheckPromotion(context.Background(), tf.repo, tf.checkReq(p.Branch, time.Now()))
	must(t, err)
	for _, b := range [][]byte{e.Sig, e.Scan} {
		n := 0
		for _, f := range rep.Findings {
			if f.Rule == trust.RuleSignatureInvalid && f.Field == "evidence "+trusttest.DigestOf(b) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d findings %s naming %s, want 1: %+v", n, trust.RuleSignatureInvalid, trusttest.DigestOf(b), rep.Findings)
		}
	}
	tf2, e2 := newAttack(t, a)
	_, err = Propose(context.Background(), tf2.repo, tf2.proposeReq())
	wantTrustRefusal(t, "propose", err, trust.RuleSignatureInvalid, trusttest.DigestOf(e2.Sig))
	if !strings.Contains(err.Error(), "evidence "+trusttest.DigestOf(e2.Scan)) {
		t.Fatalf("propose names the bad signature only: %v", err)
	}
}

// TestGatesRequireUpstreamSummary: production's policy requires a
// verification summary of an acceptance in staging, signed with the
// notifier's key. It is published after candidacy, so it is never in the
// recorded evidence: propose, verify and the PR gate find it next to the
// image. None, one by another key, of another environment or about
// another digest is refused with its rule; the notifier's passes.
func TestGatesRequireUpstreamSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		summary func(tf *trustFixture) []byte // nil: none attached
		rule    string
	}{
		{"accepted in staging", func(tf *trustFixture) []byte {
			return tf.w.SignKey(tf.w.Notifier, trusttest.Summary(tf.img, "staging", "PASSED"))
		}, ""},
		{"none", nil, trust.RuleAttestationMissing},
		{"signed by another key", func(tf *trustFixture) []byte {
			return tf.w.SignKey(tf.w.OtherKey, trusttest.Summary(tf.img, "staging", "PASSED"))
		}, trust.RuleSignatureInvalid},
		{"accepted in production, not staging", func(tf *trustFixture) []byte {
			return tf.w.SignKey(tf.w.Notifier, trusttest.Summary(tf.img, "production", "PASSED"))
		}, trust.RuleSummaryEnvironment},
		{"about another digest", func(tf *trustFixture) []byte {
			other := tf.img.Context().Digest("sha256:" + strings.Repeat("7", 64))
			return tf.w.SignKey(tf.w.Notifier, trusttest.Summary(other, "staging", "PASSED"))
		}, trust.RuleAttestationSubject},
		{"FAILED", func(tf *trustFixture) []byte {
			return tf.w.SignKey(tf.w.Notifier, trusttest.Summary(tf.img, "staging", "FAILED"))
		}, trust.RuleSummaryResult},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sum []byte
			var ci *trusttest.Evidence
			tf := newTrustFixture(t, trusttest.SummaryPolicy(productionScanAge, "staging"), func(tf *trustFixture) [][]byte {
				ci = tf.w.CIEvidence(tf.img)
				all := ci.All()
				if tc.summary != nil {
					sum = tc.summary(tf)
					all = append(all, sum)
				}
				return all
			}, func(*trustFixture) [][]byte { return ci.All() }) // recorded at candidacy: the CI's alone
			_, err := Propose(context.Background(), tf.repo, tf.proposeReq())
			if tc.rule == "" {
				must(t, err)
				return
			}
			blame := ""
			if sum != nil {
				blame = trusttest.DigestOf(sum)
			}
			wantTrustRefusal(t, "propose", err, tc.rule, blame)
		})
	}
}
