package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
)

const trustLong = `Supply-chain evidence: the signatures and attestations (SLSA provenance,
SBOM, vulnerability scan) an environment's trust policy requires of an image,
stored next to it in its registry as Sigstore bundles (docs/supply-chain.md).`

func newTrustCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Verify an image's signatures and attestations against an environment's trust policy",
		Long:  trustLong,
	}
	cmd.AddCommand(newTrustVerifyCommand(stdout))
	return cmd
}

const trustVerifyLong = `Verify IMAGE (repository@sha256:...) against the trust policy of --environment
in throughline-policy.yaml, read with its key and trusted root files at --rev of
--repo (the base branch: a change does not choose its own keys).

Without --evidence, the bundles attached to the image (OCI 1.1 referrers, cosign's
sha256-<hex>.sig/.att tags) are discovered; with --evidence, exactly those bundle
digests are re-verified (what a promotion record holds), never a newer bundle.
Prints the verified evidence as JSON: each bundle's kind, digest, predicate type
and signer, and the provenance's source commit.

The bytes of verified bundles are cached under --cache-dir by their digest (no
registry request when every bundle is there); each is verified again on every
run, signature and statement. The directory is created 0700; one that is a
symbolic link or writable or owned by another user is an error (exit 1).

Exit codes: 0 verified; 2 usage; 3 refused (the rule, the image and the evidence
digest are named: signature-missing, signature-invalid, signature-identity,
attestation-missing, attestation-subject, provenance-builder, provenance-source,
sbom-format, scan-too-old, scan-findings, scan-unreadable, evidence-missing,
environment-unknown); 4 the policy or one of its files is invalid.`

// trustVerifyOptions are the flags of trust verify.
type trustVerifyOptions struct {
	repo, rev, env, sourceCommit, cacheDir string
	evidence                               []string
	noCache                                bool
}

func (o *trustVerifyOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repo, "repo", ".", "the GitOps repository")
	f.StringVar(&o.rev, "rev", "HEAD", "the revision the policy and its files are read at (the base branch)")
	f.StringVar(&o.env, "environment", "", "the environment whose trust policy judges the image")
	f.StringVar(&o.sourceCommit, "source-commit", "", "the commit the provenance must name as its source (default: any commit)")
	f.StringArrayVar(&o.evidence, "evidence", nil, "a recorded bundle digest to re-verify (repeatable; none: discover the image's bundles)")
	f.StringVar(&o.cacheDir, "cache-dir", defaultTrustCacheDir(), "cache of verified bundles by digest, private to the user (env "+EnvCacheDir+"/trust)")
	f.BoolVar(&o.noCache, "no-cache", false, "keep no bundle cache")
}

func newTrustVerifyCommand(stdout io.Writer) *cobra.Command {
	o := &trustVerifyOptions{}
	return leaf(&cobra.Command{
		Use:     "verify --environment ENV IMAGE@DIGEST",
		Short:   "Verify an image's evidence against an environment's trust policy; print the evidence digests as JSON",
		Long:    trustVerifyLong,
		Example: `  throughline trust verify --environment production ghcr.io/example/checkout@sha256:4b1c...`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitcode.Usagef("%s needs exactly one IMAGE@DIGEST, got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
	}, o.addFlags, func(ctx context.Context, args []string) error { return o.run(ctx, stdout, args[0]) })
}

func (o *trustVerifyOptions) run(ctx context.Context, stdout io.Writer, image string) error {
	if o.env == "" {
		return exitcode.Usagef("--environment is required")
	}
	r, err := gitops.OpenLocal(ctx, o.repo)
	if err != nil {
		return err
	}
	pol, err := promotion.ReadPolicy(ctx, r, o.rev)
	if err != nil {
		return err
	}
	reg, err := promotion.Registry(pol)
	if err != nil {
		return err
	}
	read := func(ctx context.Context, p string) ([]byte, error) { return r.ReadFile(ctx, o.rev, p) }
	tp, err := trust.ForEnvironment(ctx, reg, o.env, read)
	if err != nil {
		return err
	}
	opts := trust.Options{SourceCommit: o.sourceCommit, Remote: []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}}
	if !o.noCache {
		opts.CacheDir = o.cacheDir
	}
	var ev *trust.Evidence
	if len(o.evidence) > 0 {
		ev, err = trust.VerifyRecorded(ctx, tp, image, o.evidence, opts)
	} else {
		ev, err = trust.Verify(ctx, tp, image, opts)
	}
	if err != nil {
		return err
	}
	return writeJSON(stdout, ev)
}

// defaultTrustCacheDir is $THROUGHLINE_CACHE_DIR/trust, else the user's
// cache directory (os.UserCacheDir)/throughline/trust; "" (no cache) when
// there is none: never a predictable path in the shared temporary
// directory.
func defaultTrustCacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return filepath.Join(d, "trust")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "throughline", "trust")
	}
	return ""
}
