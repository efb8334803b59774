package promote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/registry"
	"github.com/throughline-dev/throughline/trust"
)

// The refusal rules of promote candidate (besides the registry's
// environment-unknown, gate.RuleCandidateNotFirst and package trust's
// rules).
const (
	// RuleImageUnknown: the image's registry has no manifest or index of
	// that digest.
	RuleImageUnknown = "image-unknown"
	// RuleCandidateSourceCommit: the digest is already a candidate of the
	// environment built from another source commit.
	RuleCandidateSourceCommit = "candidate-source-commit"
)

// CandidateRequest asks to make Image, built by CI from SourceCommit, a
// candidate of App in the first environment Environment.
type CandidateRequest struct {
	App, Environment string
	// Image is the digest reference CI pushed: repository[:tag]@sha256:<hex>.
	Image string
	// SourceCommit is the full id of the commit CI built Image from.
	SourceCommit string
	// Path and Cluster are the target overlay and cluster ("" for the
	// environment registry's); they must be Environment's.
	Path, Cluster string
	// Renderer is throughline's version, recorded in the target.
	Renderer string
	// Trust are the registry options, the verification cache and the
	// clock of the evidence's verification (SourceCommit is set from the
	// request).
	Trust trust.Options
}

// Candidate is CI's entry point: it checks that req.Environment is a
// first environment of the registry at the base branch, that the image's
// registry has its digest, and verifies the image's signatures and
// attestations against the environment's trust policy (the provenance's
// subject must be this digest and its source req.SourceCommit). It then
// proposes the digest as Propose does (the same attempt branch,
// compare-and-swap and idempotency rules): the environment's overlay with
// the digest pinned and a CANDIDATE record whose artifact carries the
// source commit and the verified evidence by bundle digest (an empty list
// when the policy requires none), with the record's own promotion id as
// the candidacy. The same request again returns the existing attempt.
func Candidate(ctx context.Context, r *gitops.Repo, req CandidateRequest) (*Proposal, error) {
	img, err := name.NewDigest(req.Image, name.StrictValidation)
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("image %q: a digest reference (repository[:tag]@sha256:...) is required: %w", req.Image, err)}
	}
	if !promotion.ValidRevision(req.SourceCommit) {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("source commit %q: not a full commit id", req.SourceCommit)}
	}
	baseRev, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	reg, err := promotion.ReadRegistry(ctx, r, baseRev)
	if err != nil {
		return nil, err
	}
	res, err := candidateTarget(reg, req)
	if err != nil {
		return nil, err
	}
	if err := resolveDigest(ctx, img, req.Trust.RegistryOptions()); err != nil {
		return nil, err
	}
	read := func(ctx context.Context, p string) ([]byte, error) { return r.ReadFile(ctx, baseRev, p) }
	pol, err := trust.ForEnvironment(ctx, reg, req.Environment, read)
	if err != nil {
		return nil, err
	}
	opts := req.Trust
	opts.SourceCommit = req.SourceCommit
	// Seal: the verified bundles go to the registry as one evidence
	// manifest, which every later gate reads in one request.
	opts.Seal = true
	ev, err := trust.Verify(ctx, pol, req.Image, opts)
	if err != nil {
		return nil, err
	}
	art := promotion.Artifact{Image: req.Image, Digest: img.DigestStr(), SourceCommit: req.SourceCommit,
		Evidence: candidacyEvidence(req.Environment, ev)}
	if err := sameSource(ctx, r, baseRev, req, art); err != nil {
		return nil, err
	}
	p, err := proposeArtifact(ctx, r, baseRev, art, ProposeRequest{App: req.App, To: req.Environment, Path: res.Path, Cluster: res.Cluster,
		Renderer: req.Renderer}, proposeOptions{By: "throughline promote candidate", Message: candidateMessage, Candidacy: true})
	if err != nil {
		return nil, err
	}
	if p.Existing && p.Record.Artifact.SourceCommit != req.SourceCommit {
		return nil, sourceConflict(req, p.Record)
	}
	return p, nil
}

// candidateTarget refuses an environment the registry does not know or
// that is not a first environment, and resolves req's target in it.
func candidateTarget(reg *environment.Registry, req CandidateRequest) (*environment.Resolved, error) {
	if err := gate.FirstEnvironment(reg, req.Environment, req.Image); err != nil {
		return nil, err
	}
	res, err := resolveTarget(reg, req.App, req.Environment, req.Path, req.Cluster)
	if err != nil {
		return nil, gate.AboutImage(err, req.Image)
	}
	return res, nil
}

// resolveDigest checks that img's registry has a manifest or index of
// img's digest.
func resolveDigest(ctx context.Context, img name.Digest, opts []remote.Option) error {
	desc, err := remote.Head(img, append(opts, remote.WithContext(ctx))...)
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return &exitcode.Refusal{Rule: RuleImageUnknown, Object: img.String(), Reason: RuleImageUnknown,
			Err: fmt.Errorf("the registry %s has no manifest or index %s in %s", img.RegistryStr(), img.DigestStr(), img.Context().RepositoryStr())}
	}
	if err != nil {
		return fmt.Errorf("resolving %s in its registry: %w", img, registry.Wrap("head", img.String(), err))
	}
	if desc.Digest.String() != img.DigestStr() {
		return &exitcode.Refusal{Rule: RuleImageUnknown, Object: img.String(), Reason: RuleImageUnknown,
			Err: fmt.Errorf("the registry answers digest %s for %s", desc.Digest, img.DigestStr())}
	}
	return nil
}

// candidacyEvidence is the evidence reference of a candidacy in env (the
// candidacy, its promotion id, is set once the attempt is numbered): the
// verified bundles, none when env's policy requires none.
func candidacyEvidence(env string, ev *trust.Evidence) *promotion.SupplyChain {
	s := &promotion.SupplyChain{Environment: env, Items: []promotion.EvidenceItem{}, Manifest: ev.Manifest}
	for _, it := range ev.Items {
		item := promotion.EvidenceItem{Kind: it.Kind, Digest: it.Digest, PredicateType: it.PredicateType, Signer: it.Signer}
		if sc := it.Scan; sc != nil {
			// The scan's age and worst finding, read from the bundle just
			// verified: the view shows them without reading the registry.
			item.ScanFinished, item.WorstSeverity = sc.Finished.UTC().Format(time.RFC3339), sc.Worst
			item.WorstFindings, item.Findings = sc.WorstCount, sc.Findings
		}
		s.Items = append(s.Items, item)
	}
	return s
}

// sameSource refuses a candidate of a digest the environment's record at
// the base already holds from another source commit: one digest, one
// source.
func sameSource(ctx context.Context, r *gitops.Repo, baseRev string, req CandidateRequest, art promotion.Artifact) error {
	cur, err := promotion.ReadRecord(ctx, r, baseRev, req.App, req.Environment)
	if err != nil {
		return err
	}
	if cur != nil && cur.Artifact.Digest == art.Digest && cur.Artifact.SourceCommit != req.SourceCommit {
		return sourceConflict(req, cur)
	}
	return nil
}

func sourceConflict(req CandidateRequest, rec *promotion.Record) error {
	return &exitcode.Refusal{Rule: RuleCandidateSourceCommit, File: promotion.RecordPath(req.App, req.Environment), Object: req.Image,
		Field: "artifact.sourceCommit", Reason: RuleCandidateSourceCommit,
		Err: fmt.Errorf("attempt %s records the digest as built from %s, not %s", rec.PromotionID, rec.Artifact.SourceCommit, req.SourceCommit)}
}

// candidateMessage is the commit message of a new candidate record: its
// Promotion, Evidence and Evidence-Manifest lines seal the candidacy's
// evidence (gate.SealedCandidacy).
func candidateMessage(rec *promotion.Record) string {
	a := rec.Artifact
	var b strings.Builder
	fmt.Fprintf(&b, "candidate %s %s for %s\n\nPromotion: %s\nAttempt-Key: %s %s %s %d\nImage: %s\nSource-Commit: %s\n",
		rec.App, ledger.ShortDigest(a.Digest), rec.Target.Environment, rec.PromotionID, rec.App, a.Digest, rec.Target.Environment, rec.Attempt,
		a.Image, a.SourceCommit)
	if a.Evidence != nil {
		for _, it := range a.Evidence.Items {
			fmt.Fprintf(&b, "%s%s %s\n", gate.SealEvidence, it.Kind, it.Digest)
		}
		for _, it := range a.Evidence.Items {
			if it.Scanned() {
				fmt.Fprintf(&b, "%s%s\n", gate.SealScan, gate.ScanSeal(it))
			}
		}
		if a.Evidence.Manifest != "" {
			fmt.Fprintf(&b, "%s%s\n", gate.SealManifest, a.Evidence.Manifest)
		}
	}
	return b.String()
}
