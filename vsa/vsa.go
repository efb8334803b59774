package vsa

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/gowebpki/jcs"
	vsav1 "github.com/in-toto/attestation/go/predicates/vsa/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/throughline-dev/throughline/trust"
)

// PredicateType is the SLSA verification summary v1 predicate type.
const PredicateType = trust.PredicateVerificationSummary

// DefaultVerifier is the verifier.id of a summary when none is given.
const DefaultVerifier = "https://throughline.dev/notifier"

// Level is the verifiedLevels entry of an accepted digest (a custom
// value, as SLSA allows: throughline verifies no SLSA build level).
const Level = "THROUGHLINE_ACCEPTED"

// Summary is what a verification summary says about one acceptance.
type Summary struct {
	// Image is the accepted image, repository@sha256:<hex>: the first
	// subject, and the image the summary is attached to.
	Image string
	// Charts are the accepted charts, more subjects.
	Charts []Chart
	// Verifier is verifier.id (empty: DefaultVerifier).
	Verifier string
	// Environment is the environment the digest was accepted in.
	Environment string
	// Time is when it was accepted (timeVerified, to the second).
	Time time.Time
	// TrustPolicy is the hash of the environment's trust policy
	// (sha256:<hex>; empty: none), policy.digest.
	TrustPolicy string
	// Checks is the sha256:<hex> of the runtime checks file (empty: none).
	Checks string
	// Inputs are the input attestations: the supply-chain bundles the
	// promotion's evidence rests on (sha256:<hex>, stored in Image's
	// repository).
	Inputs []string
	// RenderedHash is the rendered hash of the accepted objects.
	RenderedHash string
	// Repository is the GitOps repository's URL, AcceptanceCommit the
	// commit that recorded the acceptance, Evidence the evidence file at
	// it: the evidence record is an input attestation too.
	Repository       string
	AcceptanceCommit string
	Evidence         string
	// Result is verificationResult (empty: PASSED).
	Result string
}

// Chart is a chart subject.
type Chart struct {
	Name   string
	Digest string // sha256:<hex>
}

// Extension is the "throughline" field of the predicate: what SLSA's
// fields have no place for.
type Extension struct {
	Environment      string `json:"environment"`
	TrustPolicy      string `json:"trustPolicy,omitempty"`
	Checks           string `json:"checks,omitempty"`
	RenderedHash     string `json:"renderedHash,omitempty"`
	AcceptanceCommit string `json:"acceptanceCommit,omitempty"`
	Evidence         string `json:"evidence,omitempty"`
}

// hexOf is the hex of a sha256:<hex> digest.
func hexOf(field, d string) (string, error) {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%s %q: want sha256:<64 lowercase hex>", field, d)
	}
	return hex, nil
}

// Statement is the in-toto v1 statement of s, as canonical JSON (RFC
// 8785): the same summary is always the same bytes.
func (s *Summary) Statement() ([]byte, error) {
	img, err := name.NewDigest(s.Image, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("summary image %q: a digest reference is required: %w", s.Image, err)
	}
	if s.Environment == "" {
		return nil, errors.New("summary of " + s.Image + ": no environment")
	}
	imgHex, err := hexOf("image digest", img.DigestStr())
	if err != nil {
		return nil, err
	}
	subjects := []*intoto.ResourceDescriptor{{Name: img.Context().Name(), Digest: map[string]string{"sha256": imgHex}}}
	for _, c := range s.Charts {
		hex, err := hexOf("chart "+c.Name+" digest", c.Digest)
		if err != nil {
			return nil, err
		}
		subjects = append(subjects, &intoto.ResourceDescriptor{Name: c.Name, Digest: map[string]string{"sha256": hex}})
	}
	pred, err := s.predicate(img)
	if err != nil {
		return nil, err
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, Subject: subjects, PredicateType: PredicateType, Predicate: pred}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the summary of %s: %w", s.Image, err)
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the summary of %s: %w", s.Image, err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing the summary of %s: %w", s.Image, err)
	}
	return out, nil
}

// predicate is s's VSA predicate with the throughline extension.
func (s *Summary) predicate(img name.Digest) (*structpb.Struct, error) {
	verifier := s.Verifier
	if verifier == "" {
		verifier = DefaultVerifier
	}
	result := s.Result
	if result == "" {
		result = trust.SummaryPassed
	}
	p := &vsav1.VerificationSummary{
		Verifier:           &vsav1.VerificationSummary_Verifier{Id: verifier},
		TimeVerified:       timestamppb.New(s.Time.UTC().Truncate(time.Second)),
		ResourceUri:        "oci://" + img.String(),
		Policy:             &vsav1.VerificationSummary_Policy{Uri: trust.SummaryPolicyURI(s.Environment)},
		VerificationResult: result,
		VerifiedLevels:     []string{Level},
	}
	if result != trust.SummaryPassed {
		p.VerifiedLevels = []string{"FAILED"}
	}
	if s.Checks != "" {
		if _, err := hexOf("checks hash", s.Checks); err != nil {
			return nil, err
		}
	}
	if s.TrustPolicy != "" {
		hex, err := hexOf("trust policy hash", s.TrustPolicy)
		if err != nil {
			return nil, err
		}
		p.Policy.Digest = map[string]string{"sha256": hex}
	}
	inputs := slices.Clone(s.Inputs)
	slices.Sort(inputs)
	for _, d := range slices.Compact(inputs) {
		hex, err := hexOf("input attestation", d)
		if err != nil {
			return nil, err
		}
		p.InputAttestations = append(p.InputAttestations, &vsav1.VerificationSummary_InputAttestation{
			Uri: "oci://" + img.Context().Name() + "@" + d, Digest: map[string]string{"sha256": hex}})
	}
	if s.AcceptanceCommit != "" {
		p.InputAttestations = append(p.InputAttestations, &vsav1.VerificationSummary_InputAttestation{
			Uri:    "git+" + s.Repository + "@" + s.AcceptanceCommit + "#" + s.Evidence,
			Digest: map[string]string{"gitCommit": s.AcceptanceCommit}})
	}
	raw, err := protojson.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the summary predicate: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("encoding the summary predicate: %w", err)
	}
	ext, err := json.Marshal(Extension{Environment: s.Environment, TrustPolicy: s.TrustPolicy, Checks: s.Checks,
		RenderedHash: s.RenderedHash, AcceptanceCommit: s.AcceptanceCommit, Evidence: s.Evidence})
	if err != nil {
		return nil, fmt.Errorf("encoding the summary extension: %w", err)
	}
	var em map[string]any
	if err := json.Unmarshal(ext, &em); err != nil {
		return nil, fmt.Errorf("encoding the summary extension: %w", err)
	}
	m["throughline"] = em
	pred, err := structpb.NewStruct(m)
	if err != nil {
		return nil, fmt.Errorf("the summary predicate: %w", err)
	}
	return pred, nil
}
