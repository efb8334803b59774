package main

import (
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/trust"
)

// trustGateFlags are the flags of a command that verifies supply-chain
// evidence (promote candidate verifies it first; promote propose, verify,
// check, check and rollback re-verify what a record carries): the registry
// is reached with the user's registry credentials (the Docker config, as
// trust verify), verified bundles are cached on disk by digest so that a
// warm gate makes no registry request (and verifies them all the same).
type trustGateFlags struct {
	cacheDir string
	noCache  bool
}

func (t *trustGateFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&t.cacheDir, "trust-cache-dir", defaultTrustCacheDir(),
		"cache of verified evidence bundles by digest, private to the user; verified again on every use (env "+EnvCacheDir+"/trust)")
	f.BoolVar(&t.noCache, "no-trust-cache", false, "keep no cache of evidence bundles: fetch every bundle again")
}

// trustGateHelp is the help paragraph of a command with trust gate flags.
const trustGateHelp = `Supply-chain evidence: when the target environment's trust policy requires
evidence, the signatures and attestations recorded at candidacy (by bundle
digest, in the record's artifact.evidence) are re-verified against that policy
at the base branch, fetched by digest (never newer evidence found by tag);
refused (exit 3 naming the rule, the image and the evidence digest) are a record
without evidence, a signature or attestation that does not verify, and a scan
too old or with findings above the policy's (docs/supply-chain.md). Verified
bundles are cached under --trust-cache-dir.`

// options are the registry options and cache the gate verifies with.
func (t *trustGateFlags) options() trust.Options {
	o := trust.Options{Remote: []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithUserAgent("throughline/" + buildVersion())}}
	if !t.noCache {
		o.CacheDir = t.cacheDir
	}
	return o
}
