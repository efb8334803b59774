package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promote"
)

const promoteCandidateLong = `The CI entry point: make the image CI just built a CANDIDATE of the first
environment --to (one whose promotesFrom in throughline-policy.yaml is empty),
with its supply-chain evidence recorded by digest (docs/supply-chain.md).

  1. --image must be a digest reference, repository[:tag]@sha256:<hex> (a tag
     alone is invalid input, exit 4), and the registry must have that manifest
     or index (exit 3, image-unknown).
  2. The environment registry at the base branch must list --to (exit 3,
     environment-unknown) as a first environment (exit 3, candidate-not-first:
     its artifacts come from the environments it promotes from).
  3. The image's signatures and attestations (OCI 1.1 referrers, cosign's
     sha256-<hex>.sig/.att tags) are verified against --to's trust policy,
     read with its keys and trusted roots at the base branch; the provenance
     must be about this digest and name --source-commit as its source.
  4. The digest is written into --to's overlay (its images: entry, as promote
     propose writes it) with a CANDIDATE record whose artifact names the image,
     the source commit and the evidence: each verified bundle's kind and digest,
     and the record's own promotion id as the candidacy. Later gates re-verify
     exactly these digests against their environment's policy. A policy that
     requires no evidence still gets its candidate, with an empty evidence list.
  5. Both are committed on the attempt branch throughline/promote/<app>/<to>/
     <digest12>-<attempt>, pushed (never forced) and, with --forge, a pull/merge
     request is opened: the branch, PR and idempotency rules of promote propose.

The same request again returns the existing attempt (no new commit, no second
PR); another digest makes a new attempt, and so does the same digest after its
attempt was HALTED or REJECTED. The same digest claimed for another
source commit is refused (exit 3, candidate-source-commit).

Exit codes: 0 proposed (or the existing attempt); 2 usage; 3 refused, naming
the rule, the image and the evidence digest (environment-unknown,
candidate-not-first, image-unknown, candidate-source-commit, and trust verify's
rules: signature-missing, signature-invalid, signature-identity,
attestation-missing, attestation-subject, provenance-builder,
provenance-source, sbom-format, scan-too-old, scan-findings, scan-unreadable);
4 invalid input (a tag without digest, a source commit that is not a full
commit id, an invalid policy or key file).`

const promoteCandidateExample = `  throughline promote candidate --repo . --app checkout --to staging \
    --image ghcr.io/example/checkout:1.5.0@sha256:4b7e... --source-commit "$GITHUB_SHA" \
    --forge github --forge-repo example/gitops`

// promoteCandidateOptions are the flags of promote candidate.
type promoteCandidateOptions struct {
	repo, app, to, image, sourceCommit, targetPath, cluster, output string
	ff                                                              forgeFlags
	tg                                                              trustGateFlags
}

func (o *promoteCandidateOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", "", "the GitOps repository (a Git work tree; the directory is its root)")
	f.StringVar(&o.app, "app", "", "application name")
	f.StringVar(&o.to, "to", "", "the first environment (its promotesFrom is empty)")
	f.StringVar(&o.image, "image", "", "the image CI pushed, repository[:tag]@sha256:<hex>")
	f.StringVar(&o.sourceCommit, "source-commit", "", "the full id of the commit CI built the image from (the provenance must name it)")
	f.StringVar(&o.targetPath, "path", "", "target overlay, relative to the repository (default: the environment registry's); must be TO's")
	f.StringVar(&o.cluster, "cluster", "", "target cluster (default: the environment registry's); must be the environment's")
	outputFlag(f, &o.output, "output: text or json", "text", "json")
	o.tg.addFlags(f) // the later gates' trust flags (propose, verify, check, rollback)
	o.ff.addFlags(f)
}

func newPromoteCandidateCommand(g *globals, stdout io.Writer) *cobra.Command {
	o := &promoteCandidateOptions{}
	return leaf(&cobra.Command{
		Use:     "candidate --repo DIR --app APP --to ENV --image REPO[:TAG]@sha256:... --source-commit SHA",
		Short:   "CI's entry point: verify a new image's evidence and propose it as a candidate of the first environment",
		Long:    promoteCandidateLong,
		Example: promoteCandidateExample,
	}, o.addFlags, func(ctx context.Context, _ []string) error { return o.run(ctx, g, stdout) })
}

func (o *promoteCandidateOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	if o.app == "" || o.to == "" || o.image == "" || o.sourceCommit == "" {
		return exitcode.Usagef("--app, --to, --image and --source-commit are required")
	}
	fc, err := o.ff.client()
	if err != nil {
		return err
	}
	r, err := openRepo(ctx, o.repo)
	if err != nil {
		return err
	}
	p, err := promote.Candidate(ctx, r, promote.CandidateRequest{App: o.app, Environment: o.to, Image: o.image, SourceCommit: o.sourceCommit,
		Path: o.targetPath, Cluster: o.cluster, Renderer: buildVersion(), Trust: o.tg.options()})
	if err != nil {
		return err
	}
	title := fmt.Sprintf("candidate %s %s for %s (%s)", o.app, ledger.ShortDigest(p.Record.Artifact.Digest), o.to, p.Record.PromotionID)
	if err := p.OpenPullRequest(ctx, fc, r.Base, title, p.PullRequestBody()); err != nil {
		return err
	}
	g.log.Debug().Str("promotion", p.Record.PromotionID).Str("branch", p.Branch).Bool("existing", p.Existing).Msg("candidate")
	if o.output == "json" {
		return writeJSON(stdout, p)
	}
	verb := "candidate"
	if p.Existing {
		verb = "existing attempt"
	}
	a := p.Record.Artifact
	fmt.Fprintf(stdout, "%s %s: %s %s -> %s, state %s, source commit %s\n",
		verb, p.Record.PromotionID, o.app, a.Digest, o.to, p.Record.State, a.SourceCommit)
	if a.Evidence != nil {
		for _, it := range a.Evidence.Items {
			fmt.Fprintf(stdout, "  evidence %s %s (%s)\n", it.Kind, it.Digest, it.Signer)
		}
	}
	printProposal(stdout, p)
	return nil
}
