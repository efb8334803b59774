package promote

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/sshkey"

	"github.com/google/go-containerregistry/pkg/name"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// newTrustRollbackFixture is web in production: A accepted with the
// evidence record (nil: none) references, then B; then today's policy
// (production requires the CI's key, provenance, an SBOM and a scan no
// older than 24h; key: the PEM the policy trusts) is committed.
func newTrustRollbackFixture(t *testing.T, record [][]byte, key []byte) *fixture {
	f := &fixture{t: t, top: t.TempDir()}
	f.root = f.top
	f.write(map[string]string{
		"apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"apps/web/base/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n" +
			"  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n" +
			"      containers:\n        - name: web\n          image: " + webImage + ":1.0.0\n",
	})
	f.git("init", "-q", "-b", "main")
	f.accept("1.0.0", digestA)
	file := promotion.RecordPath("web", "production")
	rec, err := promotion.Parse(file, []byte(f.read(file)))
	must(t, err)
	rec.Artifact.SourceCommit = trusttest.SourceCommit
	if record != nil {
		rec.Artifact.Evidence = supplyChain(record)
	}
	data, err := rec.Marshal()
	must(t, err)
	f.write(map[string]string{file: string(data)})
	f.git("commit", "-q", "-a", "--amend", "--no-edit")
	f.accept("1.1.0", digestB)
	pol, err := sigyaml.Marshal(map[string]any{"apiVersion": "throughline.dev/v1alpha1", "kind": "PromotionPolicy",
		"evidenceSigners": sshkey.EvidenceSignersFile, "environments": map[string]any{"production": map[string]any{"cluster": "production", "paths": []string{"apps/*/overlays/production"},
			"trust": trusttest.KeyPolicy(productionScanAge)}}})
	must(t, err)
	f.write(map[string]string{promotion.PolicyFile: string(pol), "keys/ci.pub": string(key)})
	f.commit("today's trust policy")
	f.repo, err = gitops.Open(context.Background(), f.root)
	must(t, err)
	return f
}

// TestRollbackReverifiesEvidence: the rollback target's own earlier
// record's evidence is re-verified against TODAY's trust policy; a target
// it no longer accepts is refused naming the rule, the image and the
// evidence digest; one it accepts is proposed carrying that evidence.
func TestRollbackReverifiesEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lines := errorLines(t, "testdata/rollback-reverifies-evidence.golden", 3)
	for _, tc := range []struct {
		name string
		// evidence is A's bundles (attached and recorded; nil: none
		// recorded), otherKey: today's policy trusts another key.
		evidence func(w *trusttest.World, a name.Digest) *trusttest.Evidence
		otherKey bool
		rule     string
		blame    func(e *trusttest.Evidence) []byte
	}{
		{name: "accepted before evidence was recorded", evidence: func(*trusttest.World, name.Digest) *trusttest.Evidence { return nil },
			rule: gate.RuleEvidenceUnrecorded},
		{name: "its scan is too old today", evidence: func(w *trusttest.World, a name.Digest) *trusttest.Evidence {
			e := w.CIEvidence(a)
			e.Scan = w.SignKey(w.Key, trusttest.Scan(a, time.Now().Add(-72*time.Hour), nil))
			return e
		}, rule: trust.RuleScanTooOld, blame: func(e *trusttest.Evidence) []byte { return e.Scan }},
		{name: "its signer's key was rotated out", evidence: func(w *trusttest.World, a name.Digest) *trusttest.Evidence {
			return w.CIEvidence(a)
		}, otherKey: true, rule: trust.RuleSignatureInvalid},
		{name: "accepted by today's policy", evidence: func(w *trusttest.World, a name.Digest) *trusttest.Evidence {
			return w.CIEvidence(a)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := trusttest.New(t, false)
			a, err := name.NewDigest(w.Host + "/web@" + digestA)
			must(t, err)
			e := tc.evidence(w, a)
			var record [][]byte
			if e != nil {
				w.AttachTag(a, ".att", e.All()...)
				record = e.All()
			}
			key := w.Files["keys/ci.pub"]
			if tc.otherKey {
				pem, err := w.OtherKey.GetPublicKeyPem()
				must(t, err)
				key = []byte(pem)
			}
			f := newTrustRollbackFixture(t, record, key)
			opts := trust.Options{Transport: w.As()}
			res, err := Rollback(ctx, f.repo, RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay, Renderer: renderer,
				Exists: func(context.Context, string) (bool, error) { return true, nil }, Trust: opts})
			if tc.rule == "" {
				must(t, err)
				if got := res.Proposal.Record.Artifact.Evidence; got == nil || !got.Equal(supplyChain(record)) {
					t.Fatalf("the rollback's record carries %+v, not A's evidence", got)
				}
				wantRollbackPRGate(t, f, res.Proposal.Branch, opts)
				return
			}
			img := webImage + "@" + digestA
			blame := ""
			if tc.blame != nil {
				blame = "evidence " + trusttest.DigestOf(tc.blame(e))
			}
			re := refusedBy(t, err, tc.rule)
			if re.Object != img || !strings.HasPrefix(re.Reason, tc.rule) || blame != "" && re.Field != blame {
				t.Fatalf("rollback: want refusal %s naming %s and %q, got exit %d: %v", tc.rule, img, blame, exitcode.Code(err), err)
			}
			// The refusal's own message (evidence digests and times of the
			// run) asserted above by its fields; the golden file holds what
			// rollback says around it ("today's trust policy of production").
			// Each bad bundle is its own refusal (a rotated key: all four).
			var repl []string
			for _, r := range exitcode.Refusals(err) {
				repl = append(repl, r.Error(), "<refusal>")
			}
			lines(tc.name, redacted(err, repl...))
		})
	}
}

// wantRollbackPRGate: the PR gate of the rollback finds no supply-chain
// refusal; once a contributor drops the evidence from the rollback's
// record, it refuses it: the record must carry the prior acceptance's.
func wantRollbackPRGate(t *testing.T, f *fixture, branch string, opts trust.Options) {
	t.Helper()
	req := gate.Request{Base: "main", Head: branch, Now: time.Now(), Renderer: renderer, Trust: opts}
	rep, err := gate.CheckPromotion(context.Background(), f.repo, req)
	must(t, err)
	if r := rules(rep); slices.Contains(r, gate.RuleEvidenceDiffers) || slices.Contains(r, gate.RuleEvidenceUnrecorded) {
		t.Fatalf("check of the rollback: %v\n%s", r, strings.Join(rep.Refusals, "\n"))
	}
	file := promotion.RecordPath("web", "production")
	f.amend(branch, func() {
		rec, err := promotion.Parse(file, []byte(f.read(file)))
		must(t, err)
		rec.Artifact.Evidence = nil
		data, err := rec.Marshal()
		must(t, err)
		f.write(map[string]string{file: string(data)})
	})
	rep, err = gate.CheckPromotion(context.Background(), f.repo, req)
	must(t, err)
	if r := rules(rep); !slices.Contains(r, gate.RuleEvidenceDiffers) || !slices.Contains(r, gate.RuleEvidenceUnrecorded) {
		t.Fatalf("check of the rollback without its evidence: %v\n%s", r, strings.Join(rep.Refusals, "\n"))
	}
}
