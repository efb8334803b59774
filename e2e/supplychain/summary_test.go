//go:build e2e

package supplychain

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/signing"
	"github.com/throughline-dev/throughline/trust/trusttest"
	"github.com/throughline-dev/throughline/vsa"
)

// summaryKey is a P-256 key as the notifier's Secret holds it (PKCS#8
// PEM) and its public half as the policy and cosign read it.
type summaryKey struct {
	key     *signing.Key
	pubFile string
	pubPEM  []byte
}

func newSummaryKey(t *testing.T) summaryKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	must(t, err)
	sk, err := signing.LoadKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	must(t, err)
	pub, err := sk.GetPublicKeyPem()
	must(t, err)
	file := filepath.Join(t.TempDir(), "throughline-staging.pub")
	must(t, os.WriteFile(file, []byte(pub), 0o644))
	return summaryKey{key: sk, pubFile: file, pubPEM: []byte(pub)}
}

// requireSummary makes production's trust policy require a verification
// summary of an acceptance in staging signed with k, on main.
func (w *world) requireSummary(k summaryKey) {
	w.t.Helper()
	w.requireSummaryBy("          publicKey: keys/throughline-staging.pub\n", map[string][]byte{"keys/throughline-staging.pub": k.pubPEM})
}

// requireSummaryBy makes production's trust policy require a verification
// summary of an acceptance in staging signed by signer (the YAML lines of
// verificationSummary that say who), with the repository files it names.
func (w *world) requireSummaryBy(signer string, files map[string][]byte) {
	w.t.Helper()
	dir := w.clone()
	pol := filepath.Join(dir, promotion.PolicyFile)
	data, err := os.ReadFile(pol)
	must(w.t, err)
	const prodScan = "          maxAge: 24h\n"
	if strings.Count(string(data), prodScan) != 1 {
		w.t.Fatalf("the example's production scan policy moved:\n%s", data)
	}
	data = []byte(strings.Replace(string(data), prodScan, prodScan+
		"        verificationSummary:\n          environment: staging\n"+signer, 1))
	must(w.t, os.WriteFile(pol, data, 0o644))
	for f, content := range files {
		must(w.t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		must(w.t, os.WriteFile(filepath.Join(dir, f), content, 0o644))
	}
	w.git(dir, "add", ".")
	w.git(dir, "commit", "-q", "-m", "production requires staging's verification summary")
	w.git(dir, "push", "-q", "origin", "main")
}

// publishSummary runs the notifier's publication of staging's acceptance
// of image (its record and evidence are on main, PlayAccepted): the
// notifier's own code (notifier.Summaries) reads the record at the
// acceptance commit, signs and attaches the summary in the real registry
// and records it in the evidence with a commit pushed to the real Git
// server.
func (w *world) publishSummary(signer signing.Signer, image string) (*vsa.Published, string) {
	w.t.Helper()
	work := w.clone()
	repo, err := gitrepo.Open(w.ctx, work)
	must(w.t, err)
	repo.Env = testenv.GitEnv(work)
	// The acceptance commit: the one that made the record ACCEPTED (later
	// commits, the summary's own, leave it as it is).
	commit := strings.TrimSpace(w.git(work, "log", "-1", "--format=%H", "--", promotion.RecordPath("checkout", "staging")))
	rec, err := promotion.Parse("staging.yaml", []byte(w.git(work, "show", "HEAD:"+promotion.RecordPath("checkout", "staging"))))
	must(w.t, err)
	evPath := evidence.Path("staging", "checkout", rec.PromotionID)
	ev, err := evidence.Parse(evPath, []byte(w.git(work, "show", "HEAD:"+evPath)))
	must(w.t, err)
	if ev.Image != image {
		w.t.Fatalf("staging's evidence is about %s, not %s", ev.Image, image)
	}
	proc := &notifier.Processor{Git: &evidence.GitSink{Repo: repo, Branch: "main", Signer: w.notifier.Signer},
		Registry: notifier.BaseRegistry(&gitops.Repo{Repo: repo, Base: "main"})}
	s := &notifier.Summaries{Publisher: &vsa.Publisher{Signer: signer}, Repository: w.remote}
	pub, err := s.Publish(w.ctx, proc, &evidence.Written{Commit: commit, Evidence: ev})
	if err != nil {
		w.t.Fatalf("arrow staging ACCEPTED -> verification summary: %v", err)
	}
	return pub, evPath
}

// cosign runs the cosign binary (THROUGHLINE_COSIGN_BIN) verifying the
// verification summary of ref with the notifier's public key, no
// transparency log, and the CUE policy of an acceptance in staging that
// PASSED; it returns its exit code and output.
func (w *world) cosign(k summaryKey, ref string) (int, string) {
	w.t.Helper()
	return w.cosignVerify(ref, "--key", k.pubFile, "--insecure-ignore-tlog=true")
}

// cosignVerify runs cosign verify-attestation of the verification summary
// of ref with the signer's flags, and the CUE policy of an acceptance in
// staging that PASSED; it returns its exit code and output.
func (w *world) cosignVerify(ref string, signer ...string) (int, string) {
	w.t.Helper()
	bin := os.Getenv("THROUGHLINE_COSIGN_BIN")
	if bin == "" {
		w.t.Fatal("THROUGHLINE_COSIGN_BIN is not set (hack/e2e-assets.sh builds cosign)")
	}
	cue := filepath.Join(w.t.TempDir(), "accepted-in-staging.cue")
	must(w.t, os.WriteFile(cue, []byte(`predicateType: "https://slsa.dev/verification_summary/v1"
predicate: {
	policy: uri: "https://throughline.dev/environments/staging"
	verificationResult: "PASSED"
}
`), 0o644))
	home := w.t.TempDir()
	args := append(append([]string{"verify-attestation"}, signer...), "--type", vsa.PredicateType, "--policy", cue, "--allow-http-registry", ref)
	cmd := exec.CommandContext(w.ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "TUF_ROOT="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errorsAs(err, &ee) {
			w.t.Fatalf("running cosign: %v\n%s", err, out)
		}
		return ee.ExitCode(), string(out)
	}
	return 0, string(out)
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError) //nolint:errorlint // exec's own error
	if ok {
		*ee = e
	}
	return ok
}

// trustVerify runs `throughline trust verify` of ref against
// production's policy on main (discovery: what candidacy and every-PR
// checks run), returning its exit code and stderr.
func (w *world) trustVerify(ref string) (int, string) {
	w.t.Helper()
	dir := w.clone()
	r := w.run(dir, "trust", "verify", "--repo", dir, "--rev", "origin/main", "--environment", "production",
		"--source-commit", trusttest.SourceCommit, "--no-cache", ref)
	return r.Code, r.Stderr
}

// TestVerificationSummary: staging ACCEPTS an image; the notifier's
// publication attaches a signed SLSA verification summary to its digest in
// the real registry (found by the digest's referrers) and records it in
// the evidence; production's policy requires it, and both throughline's
// gate (propose) and a real cosign verify it. Forged summaries (signed by
// another key, about another digest, of another environment, FAILED) are
// refused by throughline with their rule and by cosign; and an image
// accepted in staging without a summary is refused by production's gate.
func TestVerificationSummary(t *testing.T) {
	w := newWorld(t)
	k := newSummaryKey(t)
	w.requireSummary(k)

	image, _ := w.build(time.Hour)
	w.acceptInStaging(image, w.candidate(image))
	ref := digestRef(t, image)

	// Without its summary, production's gate refuses the image.
	dir := w.clone()
	r := w.run(dir, "promote", "propose", "--repo", dir, "--app", "checkout", "--from", "staging", "--to", "production",
		"--trust-cache-dir", w.cache)
	if r.Code != 3 || !strings.Contains(r.Stderr, trust.RuleAttestationMissing) || !strings.Contains(r.Stderr, ref) {
		t.Fatalf("arrow staging -> production propose without a summary: exit %d, want 3 %s naming %s:\n%s", r.Code,
			trust.RuleAttestationMissing, ref, r.Stderr)
	}

	// The notifier publishes it: found by digest, recorded in the evidence.
	pub, evPath := w.publishSummary(k.key, image)
	d, err := name.NewDigest(ref)
	must(t, err)
	idx, err := remote.Referrers(d)
	must(t, err)
	im, err := idx.IndexManifest()
	must(t, err)
	found := false
	for _, m := range im.Manifests {
		found = found || m.Digest.String() == pub.Manifest && m.Annotations[trust.AnnotationPredicateType] == vsa.PredicateType
	}
	if !found {
		t.Fatalf("arrow verification summary: referrers of %s %+v do not list %s", ref, im.Manifests, pub.Manifest)
	}
	tip := w.clone()
	var recorded evidence.Summary
	must(t, json.Unmarshal([]byte(w.git(tip, "show", "HEAD:"+evidence.SummaryPath(evPath))), &recorded))
	if recorded.Manifest != pub.Manifest || recorded.Statement != pub.Statement {
		t.Fatalf("arrow verification summary -> %s: %+v, want the manifest %s", evidence.SummaryPath(evPath), recorded, pub.Manifest)
	}
	// Published again (a replica, a redelivery): found, not pushed again.
	again, _ := w.publishSummary(k.key, image)
	if !again.Existing || again.Manifest != pub.Manifest {
		t.Fatalf("a second publication: %+v, want the first %s found", again, pub.Manifest)
	}

	// Verified by cosign and by production's gate.
	if code, out := w.cosign(k, ref); code != 0 {
		t.Fatalf("cosign verify-attestation of the published summary: exit %d\n%s", code, out)
	}
	dir = w.clone()
	r = w.run(dir, "promote", "propose", "--repo", dir, "--app", "checkout", "--from", "staging", "--to", "production",
		"--trust-cache-dir", w.cache)
	if r.Code != 0 {
		t.Fatalf("arrow staging -> production propose with the summary: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	// Forged summaries, each on an image of its own with the CI's evidence.
	for _, tc := range []struct {
		name string
		sign func(img, other name.Digest) []byte
		rule string
	}{
		{"signed by another key", func(img, _ name.Digest) []byte {
			return w.ci.SignKey(w.ci.OtherKey, summaryOf(t, img, "staging", ""))
		}, trust.RuleSignatureInvalid},
		{"about another digest", func(_, other name.Digest) []byte {
			return signSummary(t, k, summaryOf(t, other, "staging", ""))
		}, trust.RuleAttestationSubject},
		{"of another environment", func(img, _ name.Digest) []byte {
			return signSummary(t, k, summaryOf(t, img, "production", ""))
		}, trust.RuleSummaryEnvironment},
		{"FAILED", func(img, _ name.Digest) []byte {
			return signSummary(t, k, summaryOf(t, img, "staging", "FAILED"))
		}, trust.RuleSummaryResult},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged, _ := w.build(time.Hour)
			fref := digestRef(t, forged)
			img, err := name.NewDigest(fref)
			must(t, err)
			other, err := name.NewDigest(ref)
			must(t, err)
			b := tc.sign(img, other)
			if _, err := trust.Attach(w.ctx, fref, trust.BundleMediaType,
				map[string]string{trust.AnnotationPredicateType: vsa.PredicateType}, [][]byte{b}, nil); err != nil {
				t.Fatal(err)
			}
			code, out := w.cosign(k, fref)
			if code == 0 {
				t.Fatalf("cosign verified a summary %s:\n%s", tc.name, out)
			}
			t.Logf("cosign refuses a summary %s: exit %d: %s", tc.name, code, lastLine(out))
			code, stderr := w.trustVerify(fref)
			if code != 3 || !strings.Contains(stderr, tc.rule) || !strings.Contains(stderr, trusttest.DigestOf(b)) {
				t.Fatalf("throughline trust verify of a summary %s: exit %d, want 3 %s naming %s:\n%s", tc.name, code, tc.rule,
					trusttest.DigestOf(b), stderr)
			}
		})
	}
}

// summaryOf is the statement the notifier would make for img in env
// (result "": PASSED).
func summaryOf(t *testing.T, img name.Digest, env, result string) []byte {
	t.Helper()
	stmt, err := (&vsa.Summary{Image: img.String(), Environment: env, Time: time.Now(), Result: result}).Statement()
	must(t, err)
	return stmt
}

func signSummary(t *testing.T, k summaryKey, stmt []byte) []byte {
	t.Helper()
	b, err := signing.Sign(t.Context(), k.key, stmt)
	must(t, err)
	return b
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
