package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/throughline-dev/throughline/boundedfile"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/notifier"
	"github.com/throughline-dev/throughline/vsa"
)

// notifierFlags turn on the webhook receivers of throughline serve.
type notifierFlags struct {
	addr          string
	repoDir       string
	branch        string
	fluxKeyFile   string
	argoTokenFile string
	maxBody       int64
	rate          float64
	burst         int
	namespace     string
	statusURL     string
	tlsCertFile   string
	tlsKeyFile    string
	evidenceKey   string
	// summaryKey signs the verification summaries (none: off),
	// summaryVerifier is their verifier.id.
	summaryKey, summaryVerifier string
	// summarySigningConfig and summaryToken sign them keyless instead.
	summarySigningConfig, summaryToken string
	// forgeKind, forgeURL and forgeRepo are the forge of the commit
	// statuses (none without forgeKind).
	forgeKind, forgeURL, forgeRepo string
	git                            gitRemoteFlags
	// repo is the notifier's repository once started (nil when off): the
	// web view reads it too.
	repo   *gitops.Repo
	resync time.Duration
	// svc is the running service (nil when off), whose resync loop
	// addResync hands to the manager.
	svc *notifier.Service
}

// Environment variables read when no secret file is given.
const (
	envFluxKey     = "THROUGHLINE_FLUX_HMAC_KEY"
	envArgoCDToken = "THROUGHLINE_ARGOCD_TOKEN"
	// envSummaryKeyPassword decrypts an encrypted summary key (cosign's
	// variable).
	envSummaryKeyPassword = "COSIGN_PASSWORD"
)

func (n *notifierFlags) add(f *pflag.FlagSet) {
	f.StringVar(&n.addr, "notifier-bind-address", "", `serve the Argo CD / Flux webhook receivers here, e.g. ":8443" ("" turns them off)`)
	f.StringVar(&n.repoDir, "notifier-repo", "", "clone of the GitOps repository (remote origin) the evidence is committed to; "+
		"with --notifier-git-url, the directory serve clones it into")
	n.git.add(f)
	f.StringVar(&n.branch, "notifier-branch", "", "branch of the promotion records (default: the remote's HEAD branch)")
	f.StringVar(&n.fluxKeyFile, "notifier-flux-key-file", "",
		"file holding the generic-hmac key of the Flux Provider (else $"+envFluxKey+"; none turns /v1/flux off)")
	f.StringVar(&n.argoTokenFile, "notifier-argocd-token-file", "",
		"file holding the Argo CD webhook bearer token (else $"+envArgoCDToken+"; none turns /v1/argocd off)")
	f.Int64Var(&n.maxBody, "notifier-max-body", notifier.DefaultMaxBody, "largest delivery accepted, in bytes (413 above)")
	f.Float64Var(&n.rate, "notifier-rate", notifier.DefaultRate, "deliveries per second per sender (negative: unlimited)")
	f.IntVar(&n.burst, "notifier-burst", notifier.DefaultBurst, "burst of deliveries per sender")
	f.StringVar(&n.namespace, "notifier-acceptance-namespace", "", "accept only deliveries whose Acceptance namespace (the Application's destination, "+
		"the Kustomization's targetNamespace) is this one (default: any bound namespace)")
	f.StringVar(&n.statusURL, "notifier-status-url", "",
		`commit status link, formatted with the evidence path (e.g. "https://github.com/org/gitops/blob/main/%s")`)
	f.StringVar(&n.tlsCertFile, "notifier-tls-cert-file", "", "serve HTTPS with this PEM certificate (chain), reloaded when it changes")
	f.StringVar(&n.tlsKeyFile, "notifier-tls-key-file", "", "PEM private key of --notifier-tls-cert-file")
	f.StringVar(&n.evidenceKey, "notifier-evidence-key-file", "", "OpenSSH private key (unencrypted, from a Secret) that signs every "+
		"evidence file; list its public key in the policy's evidenceSigners (none: unsigned evidence, which every gate refuses)")
	f.StringVar(&n.summaryKey, "notifier-summary-key-file", "", "PEM private key (from a Secret; cosign's encrypted key with $"+
		envSummaryKeyPassword+") that signs a SLSA verification summary of every acceptance, attached to the image; "+
		"none, or no such file (and no --notifier-summary-signing-config): no summary is published")
	f.StringVar(&n.summarySigningConfig, "notifier-summary-signing-config", "", "sign the verification summaries keyless "+
		"instead of with a key: a Sigstore SigningConfig (JSON) naming the install's Fulcio, Rekor and timestamp authority; "+
		"needs --notifier-summary-identity-token-file; refused with a --notifier-summary-key-file that exists")
	f.StringVar(&n.summaryToken, "notifier-summary-identity-token-file", "", "OIDC token Fulcio certifies, read at each "+
		"summary (the pod's projected service-account token with audience sigstore)")
	f.StringVar(&n.summaryVerifier, "notifier-summary-verifier", "", "verifier.id of the verification summaries (default "+
		vsa.DefaultVerifier+")")
	f.DurationVar(&n.resync, "notifier-resync-interval", notifier.DefaultResyncInterval,
		"decide every RECONCILING record from its Application's or Kustomization's own status this often, without waiting "+
			"for a delivery (leader only; 0 turns it off: then a lost delivery leaves the record RECONCILING)")
	f.StringVar(&n.forgeKind, "forge", "", "set commit statuses on the desired commit on, and show the open pull/merge requests "+
		"of the attempts in flight in the web view from: github, gitlab or gitea "+
		"(token from THROUGHLINE_FORGE_TOKEN, else GITHUB_TOKEN / GITLAB_TOKEN / GITEA_TOKEN)")
	f.StringVar(&n.forgeURL, "forge-url", "", "forge API base URL (default https://api.github.com, https://gitlab.com)")
	f.StringVar(&n.forgeRepo, "forge-repo", "", "repository on the forge: owner/name (GitLab: group/project)")
}

// maxSecretFile caps a webhook secret or token file.
const maxSecretFile = 64 << 10

func readSecret(file, env string) ([]byte, error) {
	if file != "" {
		b, err := boundedfile.Read(file, maxSecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading secret: %w", err)
		}
		return bytes.TrimRight(b, "\r\n"), nil
	}
	return []byte(os.Getenv(env)), nil
}

// start starts the receivers when --notifier-bind-address is set; the
// returned stop shuts them down. The listener is bound before start
// returns, so a taken port fails the command.
func (n *notifierFlags) start(ctx context.Context, cfg *rest.Config, log zerolog.Logger) (func(), error) {
	if n.addr == "" {
		return func() {}, nil
	}
	sc, err := n.config(ctx, cfg)
	if err != nil {
		return nil, err
	}
	log = log.With().Str("component", "notifier").Logger()
	sc.Handler.Log = func(d notifier.Delivery) { logDelivery(log, d) }
	sc.OnStatusError = func(ev *evidence.Record, err error) {
		if errors.Is(err, notifier.ErrStatusDropped) {
			log.Warn().Str("promotionId", ev.PromotionID).Msg("too many commit statuses in flight: this one is dropped (the evidence is in Git)")
			return
		}
		log.Warn().Err(err).Str("promotionId", ev.PromotionID).Msg("commit status not set")
	}
	sc.OnServeError = func(err error) { log.Error().Err(err).Msg("notifier stopped") }
	sc.OnResync = func(r notifier.Resynced) { logResync(log, r) }
	sc.OnSummary = func(ev *evidence.Record, pub *vsa.Published) {
		log.Info().Str("promotion", ev.PromotionID).Str("image", ev.Image).Str("manifest", pub.Manifest).Str("statement", pub.Statement).
			Bool("existing", pub.Existing).Msg("verification summary published")
	}
	sc.OnSummaryError = func(ev *evidence.Record, err error) {
		log.Warn().Err(err).Str("promotion", ev.PromotionID).Str("image", ev.Image).
			Msg("verification summary not published: the promotion stays ACCEPTED")
	}
	svc, err := notifier.Start(ctx, sc)
	if err != nil {
		return nil, err
	}
	n.svc = svc
	log.Info().Str("address", svc.Addr().String()).Bool("tls", sc.TLSCertFile != "").Str("branch", svc.Branch()).
		Bool("flux", len(sc.Handler.FluxKey) > 0).
		Bool("argocd", len(sc.Handler.ArgoCDToken) > 0).Bool("commitStatus", sc.Forge != nil).Dur("resync", sc.ResyncInterval).
		Str("evidenceKey", svc.SigningKey()).Msg("starting the notifier")
	if svc.SigningKey() == "" {
		log.Warn().Msg("no --notifier-evidence-key-file: the evidence is unsigned, and every gate refuses it " +
			"(the policy's evidenceSigners must list the notifier's key)")
	}
	if svc.SummarySigner() == "" {
		log.Info().Str("keyFile", n.summaryKey).Msg("no verification summary key and no keyless signing config: " +
			"no summary of an acceptance is published (--notifier-summary-key-file or --notifier-summary-signing-config)")
	} else {
		log.Info().Str("summarySigner", svc.SummarySigner()).Msg("publishing a signed verification summary of every acceptance")
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Stop(sctx)
	}, nil
}

// config checks the flags, reads the secrets and opens the clone.
func (n *notifierFlags) config(ctx context.Context, cfg *rest.Config) (notifier.ServiceConfig, error) {
	sc := notifier.ServiceConfig{Addr: n.addr, Branch: n.branch, Kube: cfg, Namespace: n.namespace, StatusURL: n.statusURL,
		Handler: notifier.Config{MaxBody: n.maxBody, Rate: n.rate, Burst: n.burst}, TLSCertFile: n.tlsCertFile, TLSKeyFile: n.tlsKeyFile,
		EvidenceKeyFile: n.evidenceKey, SummaryKeyFile: n.summaryKey,
		SummarySigningConfigFile: n.summarySigningConfig, SummaryIdentityTokenFile: n.summaryToken,
		SummaryVerifier: n.summaryVerifier, SummaryRepository: n.git.url}
	if pw := os.Getenv(envSummaryKeyPassword); pw != "" {
		sc.SummaryKeyPassword = []byte(pw)
	}
	if n.repoDir == "" {
		return sc, exitcode.Usagef("--notifier-bind-address needs --notifier-repo")
	}
	if n.resync < 0 {
		return sc, exitcode.Usagef("--notifier-resync-interval %s: want 0 (off) or more", n.resync)
	}
	sc.ResyncInterval = n.resync
	if (n.tlsCertFile == "") != (n.tlsKeyFile == "") {
		return sc, exitcode.Usagef("--notifier-tls-cert-file and --notifier-tls-key-file go together")
	}
	if (n.summarySigningConfig == "") != (n.summaryToken == "") {
		return sc, exitcode.Usagef("--notifier-summary-signing-config and --notifier-summary-identity-token-file go together (keyless signing)")
	}
	if n.summarySigningConfig != "" && n.summaryKey != "" {
		// The key flag with no file (the Secret's optional summary-key
		// left out) is off; a key that is there and keyless are two
		// signers of one summary: refused.
		if _, err := os.Stat(n.summaryKey); err == nil {
			return sc, exitcode.Usagef("--notifier-summary-key-file %s exists and --notifier-summary-signing-config is set: "+
				"sign the verification summaries with a key or keyless, not both", n.summaryKey)
		}
	}
	var err error
	if sc.Handler.FluxKey, err = readSecret(n.fluxKeyFile, envFluxKey); err != nil {
		return sc, err
	}
	if sc.Handler.ArgoCDToken, err = readSecret(n.argoTokenFile, envArgoCDToken); err != nil {
		return sc, err
	}
	if len(sc.Handler.FluxKey) == 0 && len(sc.Handler.ArgoCDToken) == 0 {
		return sc, exitcode.Usagef("--notifier-bind-address: no Flux key and no Argo CD token: both receivers would be off")
	}
	if sc.Repo, err = n.git.open(ctx, n.repoDir); err != nil {
		return sc, err
	}
	n.repo = sc.Repo
	if n.forgeKind != "" {
		fc, err := forge.New(forge.Kind(n.forgeKind), n.forgeURL, n.forgeRepo)
		if err != nil {
			return sc, exitcode.Usagef("%v", err)
		}
		sc.Forge = fc
	}
	return sc, nil
}

// logDelivery writes the log line of one delivery (never a secret).
func logDelivery(log zerolog.Logger, d notifier.Delivery) {
	ev := log.Info()
	if d.Status >= 500 {
		ev = log.Warn().Err(d.Err)
	} else if d.Status >= 400 {
		ev = log.Info().AnErr("refusal", d.Err)
	}
	ev.Str("source", d.Source).Str("sender", d.Sender).Int("status", d.Status).Str("result", d.Result).
		Str("app", d.App).Str("environment", d.Environment).Str("revision", d.Revision).Str("commit", d.Commit).
		Str("promotionId", d.PromotionID).Str("traceId", d.TraceID).Dur("took", d.Duration).Msg("delivery")
}

// The resync runs on the elected leader only.
var _ interface {
	manager.Runnable
	manager.LeaderElectionRunnable
} = (*notifier.Resyncer)(nil)

// addResync hands the notifier's resync loop to the manager, which runs it
// on the elected leader only (nothing when the notifier or its resync is off).
func (n *notifierFlags) addResync(mgr manager.Manager) error {
	if n.svc == nil || n.svc.Resyncer() == nil {
		return nil
	}
	if err := mgr.Add(n.svc.Resyncer()); err != nil {
		return fmt.Errorf("adding the notifier resync: %w", err)
	}
	return nil
}

// logResync writes the log line of one resynced record (debug while it
// waits, warn when Git or the API server failed).
func logResync(log zerolog.Logger, r notifier.Resynced) {
	ev := log.Info()
	switch r.Outcome {
	case notifier.ResyncWait, notifier.ResyncDuplicate, notifier.ResyncNoController:
		ev = log.Debug()
	case notifier.ResyncError, notifier.ResyncRefused, notifier.ResyncAmbiguous:
		ev = log.Warn().Err(r.Err)
	}
	ev.Str("outcome", r.Outcome).Str("app", r.App).Str("environment", r.Environment).Str("promotionId", r.PromotionID).
		Str("object", r.Object).Str("revision", r.Revision).Str("commit", r.Commit).Str("reason", r.Reason).Str("traceId", r.TraceID).Msg("resync")
}
