package serve

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
)

// gitRemoteFlags make the notifier clone the GitOps repository itself, in
// process, with credentials read from files (a mounted Secret).
type gitRemoteFlags struct {
	url, username, tokenFile, sshKeyFile, knownHostsFile, caFile string
}

func (g *gitRemoteFlags) add(f *pflag.FlagSet) {
	f.StringVar(&g.url, "notifier-git-url", "", "clone this GitOps repository into --notifier-repo in process (no git command line needed; "+
		"fetched if the directory already holds it): https://, ssh:// or git@host:path, http:// for loopback only; never with a password in it")
	f.StringVar(&g.username, "notifier-git-username", "", `user sent with the token (default "git"; GitLab: "oauth2") or SSH user`)
	f.StringVar(&g.tokenFile, "notifier-git-token-file", "", "file holding the HTTPS access token of --notifier-git-url")
	f.StringVar(&g.sshKeyFile, "notifier-git-ssh-key-file", "", "file holding the SSH private key (PEM) of --notifier-git-url")
	f.StringVar(&g.knownHostsFile, "notifier-git-known-hosts-file", "", "known_hosts file the SSH host key must be in (required for SSH)")
	f.StringVar(&g.caFile, "notifier-git-ca-file", "", "PEM certificates trusted for the HTTPS Git remote besides the system's")
}

// open opens the notifier's repository: the in-process clone of --notifier-git-url in
// dir, else the existing clone dir through the git command line.
func (g *gitRemoteFlags) open(ctx context.Context, dir string) (*gitops.Repo, error) {
	if g.url == "" {
		if g.username+g.tokenFile+g.sshKeyFile+g.knownHostsFile+g.caFile != "" {
			return nil, exitcode.Usagef("--notifier-git-* credentials need --notifier-git-url")
		}
		repo, err := gitops.OpenLocal(ctx, dir)
		if errors.Is(err, gitrepo.ErrNoGitCLI) {
			return nil, exitcode.Usagef("--notifier-repo %s: %w; give --notifier-git-url to clone in process instead", dir, err)
		}
		if err != nil {
			return nil, err
		}
		if repo.Remote == "" {
			return nil, exitcode.Usagef("--notifier-repo %s: the clone has no remote origin to push the evidence to", dir)
		}
		return repo, nil
	}
	creds, err := g.credentials()
	if err != nil {
		return nil, err
	}
	repo, err := gitops.Clone(ctx, gitrepo.CloneOptions{URL: g.url, Dir: dir, Credentials: creds})
	var ce *gitrepo.ConfigError
	if errors.As(err, &ce) {
		return nil, exitcode.Usagef("--notifier-git-url: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("the notifier's repository: %w", err)
	}
	return repo, nil
}

// credentials reads the secret files (their content is never printed).
func (g *gitRemoteFlags) credentials() (gitrepo.Credentials, error) {
	c := gitrepo.Credentials{Username: g.username, KnownHostsFile: g.knownHostsFile}
	for _, s := range []struct {
		file string
		into *[]byte
	}{{g.tokenFile, &c.Token}, {g.sshKeyFile, &c.SSHKey}, {g.caFile, &c.CABundle}} {
		if s.file == "" {
			continue
		}
		b, err := readSecret(s.file, "")
		if err != nil {
			return c, err
		}
		if len(b) == 0 {
			return c, exitcode.Usagef("%s is empty", s.file)
		}
		*s.into = b
	}
	if g.knownHostsFile != "" {
		if _, err := os.Stat(g.knownHostsFile); err != nil {
			return c, exitcode.Usagef("--notifier-git-known-hosts-file: %w", err)
		}
	}
	return c, nil
}
