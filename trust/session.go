package trust

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/throughline-dev/throughline/remotelimit"
)

// Session is a gate's registry connections (Options.Session): one
// authentication handshake per registry (the ping, and on a registry that
// issues bearer tokens one token request for the pull scope of every
// repository the gate reads), made when the first verification needs that
// registry (never when the cache answers) and reused by every later one.
// Without a session each verification shakes hands with its image's
// repository. Safe for concurrent use.
type Session struct {
	keychain authn.Keychain
	base     http.RoundTripper
	scopes   map[string][]string

	mu         sync.Mutex
	transports map[string]http.RoundTripper
}

// NewSession is a session for a gate over images (references by digest:
// their repositories are the token's scopes), with keychain's credentials
// (nil: anonymous) over base (nil: remote.DefaultTransport), every
// response bounded (remotelimit). It makes no request.
func NewSession(images []string, keychain authn.Keychain, base http.RoundTripper) (*Session, error) {
	base = baseTransport(base)
	s := &Session{keychain: keychain, base: base, scopes: map[string][]string{}, transports: map[string]http.RoundTripper{}}
	for _, im := range images {
		img, err := parseImage(im)
		if err != nil {
			return nil, err
		}
		s.addScope(img.Context())
	}
	return s, nil
}

func (s *Session) addScope(repo name.Repository) {
	key := repo.Registry.String()
	if sc := repo.Scope(transport.PullScope); !slices.Contains(s.scopes[key], sc) {
		s.scopes[key] = append(s.scopes[key], sc)
	}
}

// remote are the registry options of repo's registry: its authenticated
// transport, shaking hands on first use.
func (s *Session) remote(ctx context.Context, repo name.Repository) ([]remote.Option, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := repo.Registry.String()
	t, ok := s.transports[key]
	if !ok {
		s.addScope(repo)
		auth := authn.Anonymous
		if s.keychain != nil {
			var err error
			if auth, err = s.keychain.Resolve(repo.Registry); err != nil {
				return nil, fmt.Errorf("credentials for %s: %w", repo.Registry, err)
			}
		}
		var err error
		if t, err = transport.NewWithContext(ctx, repo.Registry, auth, remotelimit.New(s.base, registryLimits), s.scopes[key]); err != nil {
			return nil, fmt.Errorf("authenticating with %s: %w", repo.Registry, err)
		}
		s.transports[key] = t
	}
	return []remote.Option{remote.WithTransport(t)}, nil
}
