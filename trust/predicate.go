package trust

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	provv1 "github.com/in-toto/attestation/go/predicates/provenance/v1"
	vsav1 "github.com/in-toto/attestation/go/predicates/vsa/v1"
	vulnsv02 "github.com/in-toto/attestation/go/predicates/vulns/v02"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// The predicate types package trust reads.
const (
	// PredicateSignature is cosign's image signature statement (cosign
	// sign with the bundle format): the signed statement names the digest.
	PredicateSignature = "https://sigstore.dev/cosign/sign/v1"
	// PredicateSLSAProvenance is SLSA provenance v1.
	PredicateSLSAProvenance = "https://slsa.dev/provenance/v1"
	// PredicateVulns is the in-toto vulnerability scan predicate v0.2.
	PredicateVulns = "https://in-toto.io/attestation/vulns/v0.2"
	// PredicateCycloneDX and PredicateSPDX prefix the SBOM predicate types
	// (a version may follow: https://cyclonedx.org/bom/v1.5).
	PredicateCycloneDX = "https://cyclonedx.org/bom"
	PredicateSPDX      = "https://spdx.dev/Document"
	// PredicateVerificationSummary is the SLSA verification summary v1
	// (VSA): the notifier's signed statement that a digest was accepted
	// in an environment (package vsa makes it).
	PredicateVerificationSummary = "https://slsa.dev/verification_summary/v1"
)

// SummaryPolicyPrefix prefixes the policy.uri of a verification summary
// throughline publishes: SummaryPolicyURI(env) names the environment
// whose acceptance policy (trust policy and runtime checks) the digest
// passed, the field an admission policy compares.
const SummaryPolicyPrefix = "https://throughline.dev/environments/"

// SummaryPolicyURI is the policy.uri of a verification summary of an
// acceptance in env.
func SummaryPolicyURI(env string) string { return SummaryPolicyPrefix + env }

// SummaryPassed is the verificationResult of a summary that passed.
const SummaryPassed = "PASSED"

// Kinds of evidence (Item.Kind).
const (
	KindSignature  = "signature"
	KindProvenance = "provenance"
	KindSBOM       = "sbom"
	KindScan       = "vulnerability-scan"
	// KindVerificationSummary is a verification summary (VSA) of an
	// acceptance upstream.
	KindVerificationSummary = "verification-summary"
	kindOther               = ""
)

// kindOf is the kind of evidence a predicate type is.
func kindOf(predicateType string) string {
	switch {
	case predicateType == PredicateSignature:
		return KindSignature
	case predicateType == PredicateSLSAProvenance:
		return KindProvenance
	case predicateType == PredicateVulns:
		return KindScan
	case predicateType == PredicateVerificationSummary:
		return KindVerificationSummary
	case sbomFormat(predicateType) != "":
		return KindSBOM
	}
	return kindOther
}

// sbomFormat is the SBOM format of a predicate type ("" if none).
func sbomFormat(predicateType string) string {
	for format, prefix := range map[string]string{"cyclonedx": PredicateCycloneDX, "spdx": PredicateSPDX} {
		if predicateType == prefix || strings.HasPrefix(predicateType, prefix+"/") {
			return format
		}
	}
	return ""
}

// parseStatement reads an in-toto statement (v1, or the v0.1 type URI).
func parseStatement(data []byte) (*intoto.Statement, error) {
	var s intoto.Statement
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("not an in-toto statement: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid in-toto statement: %w", err)
	}
	return &s, nil
}

// hasSubject reports whether the statement's subject names the sha256
// digest hex.
func hasSubject(s *intoto.Statement, hex string) bool {
	for _, sub := range s.GetSubject() {
		if strings.EqualFold(sub.GetDigest()["sha256"], hex) {
			return true
		}
	}
	return false
}

// predicateAs decodes the statement's predicate into m (unknown fields
// ignored).
func predicateAs(s *intoto.Statement, m proto.Message) error {
	if s.GetPredicate() == nil {
		return errors.New("no predicate")
	}
	data, err := protojson.Marshal(s.GetPredicate())
	if err != nil {
		return err
	}
	return (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, m)
}

// checkProvenance checks a SLSA provenance v1 statement: its builder is
// one of pol's, one resolved dependency is one of pol's source
// repositories with a git commit, and that commit is wantCommit when one
// is expected. It returns the rule and the source commit.
func checkProvenance(s *intoto.Statement, pol *v1alpha1.ProvenancePolicy, wantCommit string) (string, string, error) {
	var p provv1.Provenance
	if err := predicateAs(s, &p); err != nil {
		return RuleProvenanceSource, "", fmt.Errorf("reading the SLSA provenance: %w", err)
	}
	if b := p.GetRunDetails().GetBuilder().GetId(); !slices.Contains(pol.Builders, b) {
		return RuleProvenanceBuilder, "", fmt.Errorf("built by %q, not by one of the policy's builders %q", b, pol.Builders)
	}
	var seen []string
	for _, d := range p.GetBuildDefinition().GetResolvedDependencies() {
		repo := sourceRepository(d.GetUri())
		if !slices.Contains(pol.SourceRepositories, repo) {
			seen = append(seen, repo)
			continue
		}
		commit := d.GetDigest()["gitCommit"]
		if commit == "" {
			commit = d.GetDigest()["sha1"]
		}
		switch {
		case commit == "":
			return RuleProvenanceSource, "", fmt.Errorf("the source %s has no gitCommit digest", repo)
		case wantCommit != "" && !strings.EqualFold(commit, wantCommit):
			return RuleProvenanceSource, commit, fmt.Errorf("built from %s at commit %s, not at the candidate's commit %s", repo, commit, wantCommit)
		}
		return "", strings.ToLower(commit), nil
	}
	return RuleProvenanceSource, "", fmt.Errorf("built from %q, none of the policy's source repositories %q", seen, pol.SourceRepositories)
}

// sourceRepository is a resolved dependency's URI without the git+ prefix
// and the @ref suffix: git+https://github.com/o/r@refs/heads/main ->
// https://github.com/o/r.
func sourceRepository(uri string) string {
	uri = strings.TrimPrefix(uri, "git+")
	path := 0
	if i := strings.Index(uri, "://"); i >= 0 {
		if j := strings.Index(uri[i+3:], "/"); j >= 0 {
			path = i + 3 + j
		}
	}
	if i := strings.Index(uri[path:], "@"); i >= 0 {
		uri = uri[:path+i]
	}
	return strings.TrimSuffix(uri, ".git")
}

// Scan is what package trust reads of a vulnerability scan predicate.
type Scan struct {
	// Finished is metadata.scanFinishedOn.
	Finished time.Time
	// Worst is the highest severity of its findings (an index into
	// v1alpha1.Severities()), and WorstID the finding that has it.
	Worst   int
	WorstID string
	// WorstCount is how many findings have the Worst severity.
	WorstCount int
	// Findings is how many findings it lists.
	Findings int
}

// ReadScan reads an in-toto vulnerability scan predicate (vulns v0.2, as
// JSON). A finding's severity is the highest of its scores: a CVSS number
// or a word (critical, high, medium or moderate, low, negligible or none);
// a finding with no readable score counts as critical (fail closed).
func ReadScan(predicate []byte) (*Scan, error) {
	var v vulnsv02.Vulns
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(predicate, &v); err != nil {
		return nil, fmt.Errorf("not a vulns v0.2 predicate: %w", err)
	}
	fin := v.GetMetadata().GetScanFinishedOn()
	if fin == nil || fin.CheckValid() != nil {
		return nil, errors.New("metadata.scanFinishedOn: missing or invalid")
	}
	if v.GetScanner() == nil {
		return nil, errors.New("scanner: missing")
	}
	sc := &Scan{Finished: fin.AsTime(), Findings: len(v.GetScanner().GetResult())}
	for _, r := range v.GetScanner().GetResult() {
		worst := -1
		for _, s := range r.GetSeverity() {
			worst = max(worst, severityOf(s.GetScore()))
		}
		if worst < 0 {
			worst = len(v1alpha1.Severities()) - 1
		}
		switch {
		case worst > sc.Worst || sc.WorstID == "" && worst == sc.Worst:
			sc.Worst, sc.WorstID, sc.WorstCount = worst, r.GetId(), 1
		case worst == sc.Worst:
			sc.WorstCount++
		}
	}
	return sc, nil
}

// severityOf is the index in v1alpha1.Severities() of a score (-1: unreadable).
func severityOf(score string) int {
	word := strings.ToLower(strings.TrimSpace(score))
	switch word {
	case "critical":
		return 4
	case "high", "important":
		return 3
	case "medium", "moderate":
		return 2
	case "low", "negligible":
		return 1
	case "none", "info", "informational":
		return 0
	}
	f, err := strconv.ParseFloat(word, 64)
	switch {
	case err != nil || f < 0 || f > 10 || f != f:
		return -1
	case f >= 9:
		return 4
	case f >= 7:
		return 3
	case f >= 4:
		return 2
	case f > 0:
		return 1
	}
	return 0
}

// checkScan checks a scan statement against pol at now.
func checkScan(s *intoto.Statement, pol *v1alpha1.ScanPolicy, now time.Time) (string, error) {
	data, err := protojson.Marshal(s.GetPredicate())
	if err != nil {
		return RuleScanUnreadable, err
	}
	sc, err := ReadScan(data)
	if err != nil {
		return RuleScanUnreadable, err
	}
	age := now.Sub(sc.Finished)
	switch {
	case age > pol.MaxAge.Duration:
		return RuleScanTooOld, fmt.Errorf("the scan finished %s ago (%s), the policy allows %s",
			age.Round(time.Second), sc.Finished.UTC().Format(time.RFC3339), pol.MaxAge.Duration)
	case age < -5*time.Minute:
		return RuleScanTooOld, fmt.Errorf("the scan finished in the future (%s)", sc.Finished.UTC().Format(time.RFC3339))
	}
	limit := slices.Index(v1alpha1.Severities(), pol.MaxSeverity)
	if sc.Findings > 0 && (sc.Worst > limit || pol.MaxSeverity == "none") {
		return RuleScanFindings, fmt.Errorf("finding %s is %s, above the policy's maximum %s",
			sc.WorstID, v1alpha1.Severities()[sc.Worst], pol.MaxSeverity)
	}
	return "", nil
}

// checkSummary checks a verification summary statement: an acceptance in
// env (policy.uri exactly SummaryPolicyURI(env)) that PASSED.
func checkSummary(s *intoto.Statement, env string) (string, error) {
	var v vsav1.VerificationSummary
	if err := predicateAs(s, &v); err != nil {
		return RuleSummaryEnvironment, fmt.Errorf("reading the verification summary: %w", err)
	}
	if got, want := v.GetPolicy().GetUri(), SummaryPolicyURI(env); got != want {
		return RuleSummaryEnvironment, fmt.Errorf("a summary of policy %q, not of an acceptance in %s (%s)", got, env, want)
	}
	if r := v.GetVerificationResult(); r != SummaryPassed {
		return RuleSummaryResult, fmt.Errorf("its verificationResult is %q, not %s", r, SummaryPassed)
	}
	return "", nil
}
