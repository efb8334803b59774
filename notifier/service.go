package notifier

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/ssh"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/throughline-dev/throughline/boundedfile"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/trust/signing"
	"github.com/throughline-dev/throughline/vsa"
)

// Defaults of ServiceConfig.
const (
	// DefaultGitAttempts bounds the compare-and-swap retries of an evidence write.
	DefaultGitAttempts = 10
	// DefaultStatusesInFlight bounds the commit statuses posted at once.
	DefaultStatusesInFlight = 16
	// DefaultStatusTimeout bounds the posting of one commit status, retries included.
	DefaultStatusTimeout = 5 * time.Minute
)

// ErrStatusDropped is passed to ServiceConfig.OnStatusError when a commit
// status is not posted because too many are in flight (the evidence is in Git).
var ErrStatusDropped = errors.New("too many commit statuses in flight")

// ServiceConfig wires the receivers to the GitOps repository, the API
// server and the forge.
type ServiceConfig struct {
	// Handler is the receivers' configuration: secrets, limits, delivery log.
	Handler Config
	// Addr is the address listened on, e.g. ":8443" or "127.0.0.1:0".
	Addr string
	// Repo is the clone the evidence is committed to and pushed from.
	Repo *gitops.Repo
	// Branch is the branch of the promotion records (default Repo.Base).
	Branch string
	// Kube locates the API server the Acceptances are read from.
	Kube *rest.Config
	// Namespace, when set, is the only namespace an Application or a
	// Kustomization may bind an app's Acceptance to ("" = the one it binds).
	Namespace string
	// Forge, when set, receives a commit status on the desired commit for
	// every new decision; it is never waited for.
	Forge evidence.StatusSetter
	// StatusURL is the commit status link, formatted with the evidence path.
	StatusURL string
	// OnStatusError is told of every commit status not set (ErrStatusDropped
	// when dropped); nil is silent.
	OnStatusError func(ev *evidence.Record, err error)
	// OnServeError is told when the HTTP server stops with an error; nil is silent.
	OnServeError func(err error)
	// TLSCertFile and TLSKeyFile, when set (both), serve HTTPS with the
	// certificate in these PEM files, reloaded when they change.
	TLSCertFile, TLSKeyFile string
	// ResyncInterval, when positive, makes Service.Resyncer reconcile every
	// RECONCILING record from its controller's own status this often (0:
	// deliveries only).
	ResyncInterval time.Duration
	// OnResync is told of every record resynced and every failed pass; nil is silent.
	OnResync func(Resynced)
	// EvidenceKeyFile is the OpenSSH private key (unencrypted, from a
	// Secret) that signs every evidence file the notifier writes; its
	// public key is listed in the policy's evidenceSigners for the
	// environments this notifier serves. "": evidence is unsigned.
	EvidenceKeyFile string
	// SummaryKeyFile is the PEM private key (from a Secret: PKCS#8, SEC 1,
	// PKCS#1 or cosign's encrypted key with SummaryKeyPassword) that signs
	// the verification summary of every acceptance, attached to the image
	// (package vsa). "", or a file that does not exist (a Secret without
	// that key): no summary is published (Service.SummaryKey is "").
	SummaryKeyFile     string
	SummaryKeyPassword []byte
	// SummarySigningConfigFile, instead of a key, signs the summaries
	// keyless: the Sigstore SigningConfig (JSON) naming the install's
	// Fulcio, Rekor and timestamp authorities; each summary is signed with
	// a Fulcio certificate for the OIDC token read from
	// SummaryIdentityTokenFile at that moment (in a cluster: the pod's
	// projected service-account token, audience sigstore). A key file that
	// exists and a signing config are refused together.
	SummarySigningConfigFile, SummaryIdentityTokenFile string
	// SummaryVerifier is the summaries' verifier.id (empty:
	// vsa.DefaultVerifier); SummaryRepository the GitOps repository URL
	// they name with the acceptance commit.
	SummaryVerifier, SummaryRepository string
	// SummaryRemote are the registry options of the publications
	// (authentication: default the Docker config's keychain).
	SummaryRemote []remote.Option
	// OnSummary and OnSummaryError are told of every summary published,
	// and every one that was not; nil is silent.
	OnSummary      func(ev *evidence.Record, pub *vsa.Published)
	OnSummaryError func(ev *evidence.Record, err error)
}

// SummaryKey reads the PEM private key file that signs verification
// summaries: nil when file is "" or does not exist. The error names the
// file, never its content.
func SummaryKey(file string, password []byte) (*signing.Key, error) {
	if file == "" {
		return nil, nil
	}
	data, err := readSecretFile(file, "verification summary key", maxKeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	k, err := signing.LoadKey(data, password)
	if err != nil {
		return nil, fmt.Errorf("notifier: verification summary key %s: %w", file, err)
	}
	return k, nil
}

// maxSigningConfig caps a Sigstore SigningConfig file.
const maxSigningConfig = 1 << 20

// SummarySigner is what signs verification summaries: the key of
// cfg.SummaryKeyFile (SummaryKey), or a keyless signer of
// cfg.SummarySigningConfigFile with cfg.SummaryIdentityTokenFile; nil
// when neither is configured. Both at once are refused, naming the flags'
// files; so is a signing config without a token file.
func SummarySigner(cfg ServiceConfig) (signing.Signer, error) {
	key, err := SummaryKey(cfg.SummaryKeyFile, cfg.SummaryKeyPassword)
	if err != nil {
		return nil, err
	}
	if cfg.SummarySigningConfigFile == "" {
		if cfg.SummaryIdentityTokenFile != "" {
			return nil, fmt.Errorf("notifier: verification summary identity token %s without a signing config: "+
				"keyless signing needs both", cfg.SummaryIdentityTokenFile)
		}
		if key == nil {
			return nil, nil
		}
		return key, nil
	}
	if key != nil {
		return nil, fmt.Errorf("notifier: verification summaries signed with the key %s or keyless with the signing config %s: "+
			"exactly one (remove the key from the Secret, or the signing config)", cfg.SummaryKeyFile, cfg.SummarySigningConfigFile)
	}
	if cfg.SummaryIdentityTokenFile == "" {
		return nil, fmt.Errorf("notifier: verification summary signing config %s without an identity token file: "+
			"keyless signing needs both", cfg.SummarySigningConfigFile)
	}
	data, err := readSecretFile(cfg.SummarySigningConfigFile, "verification summary signing config", maxSigningConfig)
	if err != nil {
		return nil, err
	}
	sc, err := signing.LoadSigningConfig(data)
	if err != nil {
		return nil, fmt.Errorf("notifier: verification summary signing config %s: %w", cfg.SummarySigningConfigFile, err)
	}
	kl, err := signing.NewKeyless(sc, cfg.SummaryIdentityTokenFile, signing.KeylessOptions{})
	if err != nil {
		return nil, fmt.Errorf("notifier: verification summary signing config %s: %w", cfg.SummarySigningConfigFile, err)
	}
	return kl, nil
}

// maxKeyFile caps a private key file (SSH or PEM).
const maxKeyFile = 64 << 10

// readSecretFile reads the local file file (a key or a signing config
// mounted from a Secret or ConfigMap), what it is for messages, at most
// limit bytes, through boundedfile (never a FIFO or a device). Errors
// name the file, never its content; a missing file is fs.ErrNotExist.
func readSecretFile(file, what string, limit int64) ([]byte, error) {
	data, err := boundedfile.Read(file, limit)
	if err != nil {
		return nil, fmt.Errorf("notifier: %s: %w", what, err)
	}
	return data, nil
}

// EvidenceSigner reads the SSH private key file that signs evidence (nil
// for ""). The error names the file, never its content.
func EvidenceSigner(file string) (ssh.Signer, error) {
	if file == "" {
		return nil, nil
	}
	data, err := readSecretFile(file, "evidence signing key", maxKeyFile)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("notifier: evidence signing key %s is encrypted: give an unencrypted key (from a Secret)", file)
		}
		return nil, fmt.Errorf("notifier: evidence signing key %s: not an OpenSSH private key", file)
	}
	return signer, nil
}

// Service is a running notifier: its HTTP server and the commit statuses
// in flight.
type Service struct {
	srv      *http.Server
	ln       net.Listener
	branch   string
	cancelBG context.CancelFunc
	resync   *Resyncer
	// signingKey is the fingerprint of the evidence signing key ("":
	// evidence is unsigned).
	signingKey string
	// summarySigner names what signs the verification summaries ("":
	// none published); summaries the publisher.
	summarySigner string
	summaries     *Summaries
}

// SummarySigner names what signs verification summaries ("" when none
// are published): "key <hint>" (the base64 SHA-256 of the public key), or
// "keyless (Fulcio <url>)".
func (s *Service) SummarySigner() string { return s.summarySigner }

// WaitSummaries waits for the verification summaries in flight.
func (s *Service) WaitSummaries() {
	if s.summaries != nil {
		s.summaries.Wait()
	}
}

// SigningKey is the fingerprint of the key that signs the evidence this
// notifier writes ("" when it writes unsigned evidence).
func (s *Service) SigningKey() string { return s.signingKey }

// Start starts the notifier service of cfg: the listener is bound before
// Start returns (a taken port is an error), then the receivers are served
// in the background until Stop.
func Start(ctx context.Context, cfg ServiceConfig) (*Service, error) {
	if cfg.Repo == nil {
		return nil, errors.New("notifier: no GitOps repository")
	}
	branch := cfg.Branch
	if branch == "" {
		branch = cfg.Repo.Base
	}
	signer, err := EvidenceSigner(cfg.EvidenceKeyFile)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg.Kube)
	if err != nil {
		return nil, fmt.Errorf("notifier: API client: %w", err)
	}
	proc := &Processor{
		Git:  &evidence.GitSink{Repo: cfg.Repo.Repo, Branch: branch, Attempts: DefaultGitAttempts, Signer: signer},
		Live: &KubeAcceptances{Client: dyn, Namespace: cfg.Namespace, Registry: BaseRegistry(cfg.Repo), Prefix: cfg.Repo.Prefix},
		// The registry settles whether a sha256 revision is an artifact's digest or a SHA-256 commit.
		Registry: BaseRegistry(cfg.Repo),
		// With the resync on, it alone HALTs at reconcileDeadline.
		ResyncDecidesDeadline: cfg.ResyncInterval > 0,
	}
	sumSigner, err := SummarySigner(cfg)
	if err != nil {
		return nil, err
	}
	h, err := New(cfg.Handler, proc, prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	if sumSigner != nil {
		opts := cfg.SummaryRemote
		if opts == nil {
			opts = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
		}
		proc.Summaries = &Summaries{Publisher: &vsa.Publisher{Signer: sumSigner, Remote: opts}, Verifier: cfg.SummaryVerifier,
			Repository: cfg.SummaryRepository, OnPublished: cfg.OnSummary, OnError: cfg.OnSummaryError, Metrics: h.Metrics()}
	}
	var certs *certReloader
	if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" {
		if certs, err = newCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile); err != nil {
			return nil, err
		}
	}
	bg, cancelBG := context.WithCancel(context.WithoutCancel(ctx))
	if cfg.Forge != nil {
		p := newStatusPoster(bg, cfg, h.Metrics())
		proc.Status = p.post
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		cancelBG()
		return nil, fmt.Errorf("notifier: listening on %s: %w", cfg.Addr, err)
	}
	if certs != nil {
		ln = tls.NewListener(ln, certs.tlsConfig())
	}
	s := &Service{srv: NewServer(cfg.Addr, h, DefaultProcessTimeout), ln: ln, branch: branch, cancelBG: cancelBG}
	if signer != nil {
		s.signingKey = ssh.FingerprintSHA256(signer.PublicKey())
	}
	if sumSigner != nil {
		s.summarySigner, s.summaries = sumSigner.Describe(), proc.Summaries
	}
	if cfg.ResyncInterval > 0 {
		s.resync = &Resyncer{Proc: proc, Client: dyn, Prefix: cfg.Repo.Prefix, Interval: cfg.ResyncInterval, Metrics: h.Metrics(), Log: cfg.OnResync}
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && cfg.OnServeError != nil {
			cfg.OnServeError(err)
		}
	}()
	return s, nil
}

// Resyncer is the service's resync loop (nil when ServiceConfig.ResyncInterval
// is not positive). Start does not run it: the caller runs it where only
// the elected leader does (a controller-runtime manager: it is a
// LeaderElectionRunnable), or calls its Start itself.
func (s *Service) Resyncer() *Resyncer { return s.resync }

// Addr is the address the service listens on.
func (s *Service) Addr() net.Addr { return s.ln.Addr() }

// Branch is the branch the service commits evidence to.
func (s *Service) Branch() string { return s.branch }

// Stop shuts the HTTP server down (waiting for deliveries in progress until
// ctx ends) and cancels the commit statuses in flight.
func (s *Service) Stop(ctx context.Context) error {
	defer s.cancelBG()
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("notifier: shutting down %s: %w", s.ln.Addr(), err)
	}
	return nil
}

// statusPoster posts commit statuses in the background, at most
// DefaultStatusesInFlight at once; above that a status is dropped.
type statusPoster struct {
	ctx     context.Context
	sink    *evidence.StatusSink
	sem     chan struct{}
	metrics *Metrics
	onError func(ev *evidence.Record, err error)
}

func newStatusPoster(ctx context.Context, cfg ServiceConfig, m *Metrics) *statusPoster {
	onError := cfg.OnStatusError
	if onError == nil {
		onError = func(*evidence.Record, error) {}
	}
	return &statusPoster{
		ctx:     ctx,
		sink:    &evidence.StatusSink{Forge: cfg.Forge, TargetURL: cfg.StatusURL},
		sem:     make(chan struct{}, DefaultStatusesInFlight),
		metrics: m,
		onError: onError,
	}
}

// post never holds up the Git write: the evidence is already pushed.
func (p *statusPoster) post(ev *evidence.Record) {
	select {
	case p.sem <- struct{}{}:
	default:
		p.metrics.Statuses.WithLabelValues("failed").Inc()
		p.onError(ev, ErrStatusDropped)
		return
	}
	go func() {
		defer func() { <-p.sem }()
		ctx, cancel := context.WithTimeout(p.ctx, DefaultStatusTimeout)
		defer cancel()
		if err := p.sink.Post(ctx, ev); err != nil {
			p.metrics.Statuses.WithLabelValues("failed").Inc()
			p.onError(ev, err)
			return
		}
		p.metrics.Statuses.WithLabelValues("ok").Inc()
	}()
}
