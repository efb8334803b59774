package environment

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
)

// trusted is a valid trust policy: a key signer, a keyless signer and
// every attestation.
func trusted() *v1alpha1.TrustPolicy {
	return &v1alpha1.TrustPolicy{
		Signatures: []v1alpha1.SignerPolicy{
			{PublicKey: "keys/ci.pub"},
			{Keyless: &v1alpha1.KeylessSigner{Identity: "https://ci.example/release", Issuer: "https://issuer.example",
				TrustedRoot: "sigstore/trusted_root.json"}},
		},
		Attestations: &v1alpha1.AttestationPolicy{
			Provenance:        &v1alpha1.ProvenancePolicy{Builders: []string{"https://ci.example/builder"}, SourceRepositories: []string{"https://git.example/app"}},
			SBOM:              &v1alpha1.SBOMPolicy{Formats: []string{"cyclonedx"}},
			VulnerabilityScan: &v1alpha1.ScanPolicy{MaxSeverity: "medium", MaxAge: metav1.Duration{Duration: 24 * time.Hour}},
		},
	}
}

func TestTrustPolicyValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(tp *v1alpha1.TrustPolicy)
		field string // "": valid
	}{
		{"valid", func(*v1alpha1.TrustPolicy) {}, ""},
		{"key outside the repository", func(tp *v1alpha1.TrustPolicy) { tp.Signatures[0].PublicKey = "../../etc/key.pub" },
			"environments.production.trust.signatures[0].publicKey"},
		{"absolute key path", func(tp *v1alpha1.TrustPolicy) { tp.Signatures[0].PublicKey = "/etc/key.pub" },
			"environments.production.trust.signatures[0].publicKey"},
		{"key and keyless", func(tp *v1alpha1.TrustPolicy) { tp.Signatures[1].PublicKey = "keys/ci.pub" },
			"environments.production.trust.signatures[1]"},
		{"neither key nor keyless", func(tp *v1alpha1.TrustPolicy) { tp.Signatures[0] = v1alpha1.SignerPolicy{} },
			"environments.production.trust.signatures[0]"},
		{"identity and regexp", func(tp *v1alpha1.TrustPolicy) { tp.Signatures[1].Keyless.IdentityRegexp = "^x" },
			"environments.production.trust.signatures[1].keyless"},
		{"bad identity regexp", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", "^(x"
		}, "environments.production.trust.signatures[1].keyless.identityRegexp"},
		{"identity regexp anchored at neither end", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", `https://ci\.example/release`
		}, "environments.production.trust.signatures[1].keyless.identityRegexp"},
		{"identity regexp anchored at the start only", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", `^https://ci\.example/`
		}, "environments.production.trust.signatures[1].keyless.identityRegexp"},
		{"identity regexp anchored in one alternative only", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", `^https://ci\.example/release$|https://ci\.example/nightly`
		}, "environments.production.trust.signatures[1].keyless.identityRegexp"},
		{"identity regexp ending in an escaped dollar", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", `^https://ci\.example/release\$`
		}, "environments.production.trust.signatures[1].keyless.identityRegexp"},
		{"identity regexp anchored per line only", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", `(?m)^https://ci\.example/release$`
		}, "environments.production.trust.signatures[1].keyless.identityRegexp"},
		{"identity regexp anchored", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", `^https://ci\.example/(release|nightly)$`
		}, ""},
		{"identity regexp anchored in every alternative", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures[1].Keyless.Identity, tp.Signatures[1].Keyless.IdentityRegexp = "", `^https://ci\.example/release$|^https://ci\.example/nightly$`
		}, ""},
		{"no issuer", func(tp *v1alpha1.TrustPolicy) { tp.Signatures[1].Keyless.Issuer = "" },
			"environments.production.trust.signatures[1].keyless.issuer"},
		{"no trusted root", func(tp *v1alpha1.TrustPolicy) { tp.Signatures[1].Keyless.TrustedRoot = "" },
			"environments.production.trust.signatures[1].keyless.trustedRoot"},
		{"attestations without signer", func(tp *v1alpha1.TrustPolicy) { tp.Signatures = nil },
			"environments.production.trust.signatures"},
		{"no builder", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.Provenance.Builders = nil },
			"environments.production.trust.attestations.provenance.builders"},
		{"no source repository", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.Provenance.SourceRepositories = []string{""} },
			"environments.production.trust.attestations.provenance.sourceRepositories"},
		{"unknown sbom format", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.SBOM.Formats = []string{"swid"} },
			"environments.production.trust.attestations.sbom.formats[0]"},
		{"summary of staging", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "staging", PublicKey: "keys/throughline.pub"}
		}, ""},
		{"a summary alone needs no signer", func(tp *v1alpha1.TrustPolicy) {
			tp.Signatures = nil
			tp.Attestations = &v1alpha1.AttestationPolicy{VerificationSummary: &v1alpha1.SummaryPolicy{Environment: "staging",
				PublicKey: "keys/throughline.pub"}}
		}, ""},
		{"summary of an unknown environment", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "qa", PublicKey: "keys/throughline.pub"}
		}, "environments.production.trust.attestations.verificationSummary.environment"},
		{"summary of no environment", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{PublicKey: "keys/throughline.pub"}
		}, "environments.production.trust.attestations.verificationSummary.environment"},
		{"summary key outside the repository", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "staging", PublicKey: "../key.pub"}
		}, "environments.production.trust.attestations.verificationSummary.publicKey"},
		{"summary signed keyless", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "staging", Keyless: &v1alpha1.KeylessSigner{
				Identity: "https://kubernetes.io/namespaces/throughline/serviceaccounts/throughline", Issuer: "https://kubernetes.default.svc",
				TrustedRoot: "sigstore/private-root.json"}}
		}, ""},
		{"summary with a key and keyless", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "staging", PublicKey: "keys/throughline.pub",
				Keyless: &v1alpha1.KeylessSigner{Identity: "x", Issuer: "https://issuer", TrustedRoot: "root.json"}}
		}, "environments.production.trust.attestations.verificationSummary"},
		{"summary with no signer", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "staging"}
		}, "environments.production.trust.attestations.verificationSummary"},
		{"summary keyless without issuer", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "staging",
				Keyless: &v1alpha1.KeylessSigner{Identity: "x", TrustedRoot: "root.json"}}
		}, "environments.production.trust.attestations.verificationSummary.keyless.issuer"},
		{"summary trusted root outside the repository", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.VerificationSummary = &v1alpha1.SummaryPolicy{Environment: "staging",
				Keyless: &v1alpha1.KeylessSigner{Identity: "x", Issuer: "https://issuer", TrustedRoot: "../root.json"}}
		}, "environments.production.trust.attestations.verificationSummary.keyless.trustedRoot"},
		{"unknown severity", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.VulnerabilityScan.MaxSeverity = "severe" },
			"environments.production.trust.attestations.vulnerabilityScan.maxSeverity"},
		{"no scan age", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.VulnerabilityScan.MaxAge.Duration = 0 },
			"environments.production.trust.attestations.vulnerabilityScan.maxAge"},
	}
	// Each error's field ([...]) in its message: testdata/trust-fields.golden.
	msgs := golden.ErrorLines(t, "testdata/trust-fields.golden", 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := example()
			e := p.Environments["production"]
			e.Trust = trusted()
			tt.edit(e.Trust)
			p.Environments["production"] = e
			_, err := New(file, p)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			wantInvalid(t, err)
			msgs(tt.name+" ["+tt.field+"]", err)
		})
	}
}

// TestUnanchoredIdentityRegexpRefused: the pattern a careless policy
// writes for its release workflow also matches the certificate of an
// attacker's repository whose identity merely contains it; validation
// refuses it, naming the field.
func TestUnanchoredIdentityRegexpRefused(t *testing.T) {
	t.Parallel()
	const (
		careless = `https://github\.com/org/app/\.github/workflows/release\.yml@refs/heads/main`
		attacker = "https://github.com/attacker/x/?https://github.com/org/app/.github/workflows/release.yml@refs/heads/main"
	)
	if !regexp.MustCompile(careless).MatchString(attacker) {
		t.Fatal("the careless pattern does not match the attacker's identity: the test proves nothing")
	}
	p := example()
	e := p.Environments["production"]
	e.Trust = trusted()
	e.Trust.Signatures[1].Keyless.Identity, e.Trust.Signatures[1].Keyless.IdentityRegexp = "", careless
	p.Environments["production"] = e
	_, err := New(file, p)
	if !errors.Is(err, ErrUnanchoredRegexp) || exitcode.Code(err) != exitcode.Invalid {
		t.Fatalf("an unanchored identityRegexp: exit %d: %v", exitcode.Code(err), err)
	}
	const field = "environments.production.trust.signatures[1].keyless.identityRegexp:"
	if !strings.Contains(err.Error(), field) {
		t.Errorf("error %q does not name %s", err, field)
	}
	if err := CheckIdentityRegexp("^" + careless + "$"); err != nil {
		t.Errorf("the anchored pattern: %v", err)
	}
}
