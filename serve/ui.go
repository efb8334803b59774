package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/chainview"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/notifier"
)

// uiFlags turn on the read-only web view of throughline serve (the pages
// of throughline report, read from the repository again when its branch
// moves).
type uiFlags struct {
	addr, repo, rev, commitURL string
	tlsCertFile, tlsKeyFile    string
	apiTokenFile               string
	ttl                        time.Duration
	live, narrow               bool
}

// envUIAPIToken holds the JSON API's bearer token when --ui-api-token-file
// is not set.
const envUIAPIToken = "THROUGHLINE_UI_API_TOKEN"

// uiRenderTimeout bounds one load and render of the pages.
const uiRenderTimeout = 60 * time.Second

func (u *uiFlags) add(f *pflag.FlagSet) {
	f.StringVar(&u.addr, "ui-bind-address", "", `serve the read-only web view of the chain here, e.g. "127.0.0.1:8090" ("" turns it off)`)
	f.StringVar(&u.repo, "ui-repo", "", "clone of the GitOps repository the web view reads (default: --notifier-repo)")
	f.StringVar(&u.rev, "ui-rev", "", "revision the web view reads (default: the repository's base branch)")
	f.StringVar(&u.commitURL, "ui-commit-url", "", `link every commit, formatted with its id (e.g. "https://github.com/org/gitops/commit/%s")`)
	f.DurationVar(&u.ttl, "ui-refresh", chainview.DefaultTTL, "ask Git whether the branch moved, and the cluster what runs, at most this often")
	f.BoolVar(&u.live, "ui-live", true, "show drift between what Git declares and what the Acceptances' status says runs (needs list on acceptances)")
	f.BoolVar(&u.narrow, "ui-api-narrow", true, "answer a JSON API request through Argo CD's proxy extension about the Application "+
		"it names only, read from the cluster (needs get on applications.argoproj.io)")
	f.StringVar(&u.tlsCertFile, "ui-tls-cert-file", "", "serve the web view over HTTPS with this PEM certificate (chain)")
	f.StringVar(&u.tlsKeyFile, "ui-tls-key-file", "", "PEM private key of --ui-tls-cert-file")
	f.StringVar(&u.apiTokenFile, "ui-api-token-file", "",
		"file holding the bearer token the JSON API (/api/v1/, the Argo CD extension's) requires (else $"+envUIAPIToken+"; none: no token)")
}

// start serves the web view until ctx ends (nothing when --ui-bind-address
// is empty); notifierRepo is the default of --ui-repo, cfg (nil: none) the
// cluster whose Acceptances say what runs.
func (u *uiFlags) start(ctx context.Context, cfg *rest.Config, n *notifierFlags, log zerolog.Logger) error {
	if u.addr == "" {
		return nil
	}
	log = log.With().Str("component", "ui").Logger()
	h, err := u.handler(ctx, n, log)
	if err != nil {
		return err
	}
	if u.live && cfg != nil {
		if h.Live, err = liveAcceptances(cfg); err != nil {
			return err
		}
	}
	if u.narrow && cfg != nil {
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			return fmt.Errorf("web view: a client for the Applications: %w", err)
		}
		h.Applications = chainview.KubeApplications(func(ctx context.Context, ns, name string, u *unstructured.Unstructured) error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
		})
	}
	if n.forgeKind != "" {
		// The notifier's forge: the view lists its open requests every
		// chainview.DefaultPullsTTL (at least --ui-refresh).
		fc, err := forge.New(forge.Kind(n.forgeKind), n.forgeURL, n.forgeRepo)
		if err != nil {
			return exitcode.Usagef("%v", err)
		}
		h.Pulls, h.Forge = chainview.ForgeLister(fc), n.forgeKind
	}
	// The notifier's hardening: header, read, write and idle timeouts and
	// a header size limit; the handler answers GET and HEAD only.
	srv := notifier.NewServer(u.addr, h, uiRenderTimeout)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", u.addr)
	if err != nil {
		return exitcode.Usagef("--ui-bind-address %s: %v", u.addr, err)
	}
	log.Info().Str("address", ln.Addr().String()).Bool("tls", u.tlsCertFile != "").Msg("serving the web view")
	go func() {
		if err := h.Preload(ctx); err != nil {
			log.Warn().Err(err).Msg("web view: cannot read the repository yet")
		}
	}()
	go func() {
		var err error
		if u.tlsCertFile != "" {
			err = srv.ServeTLS(ln, u.tlsCertFile, u.tlsKeyFile)
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("web view stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return nil
}

// handler checks the flags and opens the repository.
func (u *uiFlags) handler(ctx context.Context, n *notifierFlags, log zerolog.Logger) (*chainview.Handler, error) {
	if (u.tlsCertFile == "") != (u.tlsKeyFile == "") {
		return nil, exitcode.Usagef("--ui-tls-cert-file and --ui-tls-key-file go together")
	}
	if err := chainview.CheckCommitURL(u.commitURL); err != nil {
		return nil, exitcode.Usagef("--ui-commit-url %q: %w", u.commitURL, err)
	}
	// The notifier's repository when the view reads it: its clone (the
	// in-process one of --notifier-git-url in the image, which has no git).
	r := n.repo
	if u.repo != "" || r == nil {
		dir := cmp.Or(u.repo, n.repoDir)
		if dir == "" {
			return nil, exitcode.Usagef("--ui-bind-address needs --ui-repo (or --notifier-repo)")
		}
		var err error
		if r, err = gitops.OpenLocal(ctx, dir); err != nil {
			return nil, err
		}
		if err = r.ReadInProcess(); err != nil { // thousands of reads per load: no process each
			return nil, err
		}
	}
	token, err := readSecret(u.apiTokenFile, envUIAPIToken)
	if err != nil {
		return nil, exitcode.Usagef("--ui-api-token-file: %w", err)
	}
	if u.apiTokenFile != "" && len(token) == 0 {
		return nil, exitcode.Usagef("--ui-api-token-file %s is empty", u.apiTokenFile)
	}
	return &chainview.Handler{Repo: r, TTL: u.ttl, Options: chainview.Options{Rev: u.rev, CommitURL: u.commitURL}, APIToken: token,
		Fetch: r.Remote != "", Log: func(err error) { log.Warn().Err(err).Msg("web view: cannot read the repository") }}, nil
}

// liveAcceptances lists the Acceptances of the cluster (as unstructured:
// no scheme to register) for what runs.
func liveAcceptances(cfg *rest.Config) (func(context.Context) (map[string]chainview.Live, error), error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("web view: a client for the Acceptances: %w", err)
	}
	return chainview.KubeLive(func(ctx context.Context, l *unstructured.UnstructuredList) error { return c.List(ctx, l) }), nil
}
