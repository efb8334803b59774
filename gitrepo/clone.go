package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrNeedsGitCLI is wrapped by every operation an in-process clone (see
// [Clone]) does not do: those run the git command line, which a clone made
// for a server without git does not use.
var ErrNeedsGitCLI = errors.New("needs the git command line, and this repository is an in-process clone")

// ErrNoGitCLI is wrapped when the git command line is not installed.
var ErrNoGitCLI = errors.New("the git command line is not installed (no git on PATH)")

// ConfigError is a URL, credential or clone directory that Clone refuses
// before any network use: the caller's configuration, not the remote.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// Credentials authenticate an in-process clone to its remote. They are
// never put in a URL, and never printed.
type Credentials struct {
	// Username is the HTTPS basic-auth user a token is sent with (default
	// "git"; GitHub takes any, GitLab "oauth2") or the SSH user (default:
	// the URL's, else "git").
	Username string
	// Token is an HTTPS access token or password.
	Token []byte
	// SSHKey is a PEM private key for an ssh:// or scp-like (git@host:path) URL.
	SSHKey []byte
	// KnownHostsFile is the known_hosts file an SSH host key must be in
	// (required for SSH: a host key is never accepted unchecked).
	KnownHostsFile string
	// CABundle holds PEM certificates trusted for an HTTPS remote besides
	// the system's.
	CABundle []byte
}

// CloneOptions configures [Clone].
type CloneOptions struct {
	// URL is the remote: https://, ssh://, or scp-like git@host:org/repo.git.
	// http:// is taken for a loopback host only (credentials would travel
	// in clear text). It must not carry a password.
	URL string
	// Dir holds the bare clone: created when absent or empty, fetched when
	// it already holds a clone of URL.
	Dir string
	// Credentials, optional.
	Credentials Credentials
}

// inProcess is the go-git side of a Repo made by Clone: the bare clone and
// how to reach its remote. mu serializes every operation on it (go-git's
// repository is not safe for concurrent use).
type inProcess struct {
	mu       sync.Mutex
	repo     *gogit.Repository
	url      string
	auth     transport.AuthMethod
	caBundle []byte
	// index is the history read so far, by commit id.
	index commitIndex
}

// Clone makes (or reopens) a bare clone of opts.URL in opts.Dir whose Git
// operations all run in process with go-git: no git command line, no
// shell, no ssh binary. The returned Repo reads files, lists trees,
// decides ancestry, builds commits and moves branches by compare-and-swap
// push like one opened with [Open]; the operations that need a work tree
// or the git command line (Export, Changed, signing, VerifyCommit, ...)
// wrap ErrNeedsGitCLI. The GitOps root is the repository's top directory.
func Clone(ctx context.Context, opts CloneOptions) (*Repo, error) {
	auth, err := authFor(opts.URL, opts.Credentials)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("clone %s: %w", Redact(opts.URL), err)}
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("clone %s into %s: %w", Redact(opts.URL), opts.Dir, err)
	}
	repo, err := openOrInit(dir, opts.URL)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("clone %s into %s: %w", Redact(opts.URL), dir, err)}
	}
	r := &Repo{Top: dir, Remote: "origin", mem: &inProcess{repo: repo, url: opts.URL, auth: auth, caBundle: opts.Credentials.CABundle}}
	if err := r.Fetch(ctx); err != nil {
		return nil, fmt.Errorf("clone %s into %s: %w", Redact(opts.URL), dir, err)
	}
	unlock := r.mem.lock()
	defer unlock()
	if err := r.mem.recordHead(ctx); err != nil {
		return nil, fmt.Errorf("clone %s into %s: %w", Redact(opts.URL), dir, err)
	}
	return r, nil
}

// openOrInit opens the bare clone in dir, or makes an empty one when dir is
// absent or empty; a clone of another URL, or a directory holding anything
// else, is refused rather than reused or overwritten.
func openOrInit(dir, remoteURL string) (*gogit.Repository, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if len(entries) == 0 {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		repo, err := gogit.PlainInit(dir, true)
		if err == nil {
			repo, err = keepPacksOpen(repo)
		}
		if err != nil {
			return nil, fmt.Errorf("init a bare repository: %w", err)
		}
		if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remoteURL},
			Fetch: []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}}); err != nil {
			return nil, fmt.Errorf("add remote origin: %w", err)
		}
		return repo, nil
	}
	repo, err := gogit.PlainOpen(dir)
	if err == nil {
		repo, err = keepPacksOpen(repo)
	}
	if err != nil {
		return nil, fmt.Errorf("the directory is neither empty nor a clone: %w", err)
	}
	rem, err := repo.Remote("origin")
	if err != nil {
		return nil, fmt.Errorf("the clone has no remote origin: %w", err)
	}
	if urls := rem.Config().URLs; len(urls) != 1 || urls[0] != remoteURL {
		return nil, fmt.Errorf("the directory holds a clone of %s, not of this URL", Redact(strings.Join(urls, " ")))
	}
	return repo, nil
}

// authFor checks the URL and picks the transport's credentials.
func authFor(raw string, c Credentials) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("not a Git URL: %w", err)
	}
	if ep.Password != "" {
		return nil, errors.New("the URL carries a password: give the token as a file instead")
	}
	switch ep.Protocol {
	case "https", "http":
		if len(c.SSHKey) > 0 || c.KnownHostsFile != "" {
			return nil, fmt.Errorf("an SSH key or known_hosts file for an %s URL", ep.Protocol)
		}
		if ep.Protocol == "http" && !loopback(ep.Host) {
			return nil, fmt.Errorf("http:// to %s: use https:// (http is taken for a loopback host only)", ep.Host)
		}
		if len(c.Token) == 0 {
			return nil, nil
		}
		user := c.Username
		if user == "" {
			user = "git"
		}
		return &githttp.BasicAuth{Username: user, Password: string(c.Token)}, nil
	case "ssh":
		if len(c.Token) > 0 {
			return nil, errors.New("a token for an SSH URL: give an SSH key")
		}
		if len(c.SSHKey) == 0 || c.KnownHostsFile == "" {
			return nil, errors.New("an SSH URL needs an SSH key and a known_hosts file")
		}
		user := c.Username
		if user == "" {
			user = ep.User
		}
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, c.SSHKey, "")
		if err != nil {
			return nil, fmt.Errorf("the SSH key: %w", err)
		}
		cb, err := gitssh.NewKnownHostsCallback(c.KnownHostsFile)
		if err != nil {
			return nil, fmt.Errorf("known_hosts file %s: %w", c.KnownHostsFile, err)
		}
		keys.HostKeyCallback = cb
		return keys, nil
	default:
		return nil, fmt.Errorf("protocol %q: want https, ssh or (loopback only) http", ep.Protocol)
	}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Redact is raw with any password or user information of a URL replaced,
// for messages and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// lock serializes use of the go-git repository.
func (m *inProcess) lock() func() {
	m.mu.Lock()
	return m.mu.Unlock
}

// remote is the origin of the clone.
func (m *inProcess) remote() (*gogit.Remote, error) {
	rem, err := m.repo.Remote("origin")
	if err != nil {
		return nil, fmt.Errorf("remote origin: %w", err)
	}
	return rem, nil
}

// list is the remote's references, HEAD included (symbolic when the server
// says which branch it points to).
func (m *inProcess) list(ctx context.Context) ([]*plumbing.Reference, error) {
	rem, err := m.remote()
	if err != nil {
		return nil, err
	}
	refs, err := rem.ListContext(ctx, &gogit.ListOptions{Auth: m.auth, CABundle: m.caBundle})
	if err != nil {
		return nil, fmt.Errorf("list the references of %s: %w", Redact(m.url), err)
	}
	return refs, nil
}

// ReadInProcess makes the reads of a work tree opened with Open (Resolve,
// ReadFile, ListTree, IsAncestor, FileHistory) run in process with go-git
// on the same repository, instead of one git process each: what a view
// that reads thousands of files needs. Everything else still runs git; a
// revision go-git does not parse is resolved by git. After Fetch the
// repository is opened again (git may have written new packs).
func (r *Repo) ReadInProcess() error {
	if r.mem != nil {
		return nil
	}
	m := &inProcess{}
	if err := m.reopen(r.Top); err != nil {
		return fmt.Errorf("open %s in process: %w", r.Top, err)
	}
	r.reads = m
	return nil
}

// reopen opens the repository of the work tree top (closing the one open
// before).
func (m *inProcess) reopen(top string) error {
	repo, err := gogit.PlainOpenWithOptions(top, &gogit.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err == nil {
		repo, err = keepPacksOpen(repo)
	}
	if err != nil {
		return err
	}
	m.close()
	m.repo = repo
	return nil
}

// close closes the pack files m keeps open.
func (m *inProcess) close() {
	if m.repo == nil {
		return
	}
	if c, ok := m.repo.Storer.(io.Closer); ok {
		_ = c.Close() // read-only descriptors: nothing is lost
	}
}

// maxOpenPacks is how many pack files an in-process repository keeps open.
const maxOpenPacks = 16

// keepPacksOpen is repo's storage again, keeping up to maxOpenPacks pack
// files open between reads: go-git otherwise opens the pack (and follows
// every path element to it) for each object it reads, the most of what a
// history walk costs (BenchmarkDeliveryRead). The work tree is not needed:
// reads and commits go through the storage.
func keepPacksOpen(repo *gogit.Repository) (*gogit.Repository, error) {
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return repo, nil
	}
	return gogit.Open(filesystem.NewStorageWithOptions(st.Filesystem(), cache.NewObjectLRUDefault(),
		filesystem.Options{MaxOpenDescriptors: maxOpenPacks}), nil)
}
