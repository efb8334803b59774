//go:build e2e

package argocdcontrol

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/trust"
)

// newSummaryKey writes a P-256 private key as the notifier's Secret holds
// it (PKCS#8 PEM, serve --notifier-summary-key-file) and returns the
// file and the PEM public key a trust policy names.
func newSummaryKey(t *testing.T) (string, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	must(t, err)
	file := filepath.Join(t.TempDir(), "summary-key")
	must(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	pub, err := x509.MarshalPKIXPublicKey(k.Public())
	must(t, err)
	return file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
}

// checkSummary proves the arrow "staging runtime evidence -> verification
// summary on B" (issue 38) as serve runs it: the notifier that accepted B
// in staging (its resync, on its own clone) published the signed SLSA
// verification summary next to B in the suite's registry and recorded it
// beside the evidence in Git; the summary verifies as production's
// "accepted in staging" requirement does, with the notifier's public key,
// and not as an acceptance in another environment or under another key.
func (e *env) checkSummary(run chainRun, evPath string) {
	e.t.Helper()
	const arrow = "arrow staging runtime evidence -> verification summary on B"
	tip := e.remoteTip(e.remote)
	var rec evidence.Summary
	if err := json.Unmarshal([]byte(e.in(e.clone(), "show", tip+":"+evidence.SummaryPath(evPath))), &rec); err != nil {
		e.t.Fatalf("%s: %s at %.12s: %v", arrow, evidence.SummaryPath(evPath), tip, err)
	}
	ref := run.repo + "@" + run.b
	opts := []remote.Option{remote.WithContext(e.ctx), remote.WithAuth(authn.Anonymous)}
	d, err := name.NewDigest(ref)
	must(e.t, err)
	idx, err := remote.Referrers(d, opts...)
	must(e.t, err)
	im, err := idx.IndexManifest()
	must(e.t, err)
	if !slices.ContainsFunc(im.Manifests, func(d v1.Descriptor) bool { return d.Digest.String() == rec.Manifest }) {
		e.t.Fatalf("%s: the referrers of %s do not list the recorded summary %s: %+v", arrow, ref, rec.Manifest, im.Manifests)
	}
	_, otherPub := newSummaryKey(e.t)
	for _, c := range []struct {
		name, env string
		pub       []byte
		rule      string
	}{
		{"accepted in staging, the notifier's key", "staging", run.summaryPub, ""},
		{"asked as an acceptance in qa", "qa", run.summaryPub, trust.RuleSummaryEnvironment},
		{"another key", "staging", otherPub, trust.RuleSignatureInvalid},
	} {
		pol, err := trust.Compile(e.ctx, "production", &v1alpha1.TrustPolicy{Attestations: &v1alpha1.AttestationPolicy{
			VerificationSummary: &v1alpha1.SummaryPolicy{Environment: c.env, PublicKey: "keys/summary.pub"}}},
			func(_ context.Context, p string) ([]byte, error) {
				if p != "keys/summary.pub" {
					return nil, fmt.Errorf("%s: %w", p, os.ErrNotExist)
				}
				return c.pub, nil
			})
		must(e.t, err)
		ev, err := trust.Verify(e.ctx, pol, ref, trust.Options{Remote: opts[1:], Now: time.Now()})
		if c.rule == "" {
			if err != nil {
				e.t.Fatalf("%s: %s: %v", arrow, c.name, err)
			}
			if !slices.ContainsFunc(ev.Items, func(it trust.Item) bool { return it.Kind == trust.KindVerificationSummary }) {
				e.t.Fatalf("%s: %s: no verification summary among %+v", arrow, c.name, ev.Items)
			}
			continue
		}
		var re *exitcode.Refusal
		if !errors.As(err, &re) || re.Rule != c.rule {
			e.t.Fatalf("%s: %s: %v, want the refusal %s", arrow, c.name, err, c.rule)
		}
	}
	e.t.Logf("verification summary of B in staging: referrer %s, statement %s, acceptance commit %.12s", rec.Manifest, rec.Statement,
		rec.AcceptanceCommit)
}
