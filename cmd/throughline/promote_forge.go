package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/forge"
)

// forgeFlags configure the forge propose opens a PR/MR on (report: whose
// open requests the pages show).
type forgeFlags struct {
	kind, url, repo string
	// use says what --forge does for the command (default: open a
	// pull/merge request on it).
	use string
}

// add adds the forge flags to cmd.
func (f *forgeFlags) add(cmd *cobra.Command) { f.addFlags(cmd.Flags()) }

// addFlags adds the forge flags to fl.
func (f *forgeFlags) addFlags(fl *pflag.FlagSet) {
	use := f.use
	if use == "" {
		use = "open a pull/merge request on"
	}
	fl.StringVar(&f.kind, "forge", "", use+": github, gitlab or gitea "+
		"(token from THROUGHLINE_FORGE_TOKEN, else GITHUB_TOKEN / GITLAB_TOKEN / GITEA_TOKEN)")
	fl.StringVar(&f.url, "forge-url", "", "forge API base URL (default https://api.github.com, https://gitlab.com)")
	fl.StringVar(&f.repo, "forge-repo", "", "repository on the forge: owner/name (GitLab: group/project)")
}

// client is nil when no forge is configured.
func (f *forgeFlags) client() (*forge.Client, error) {
	if f.kind == "" {
		return nil, nil
	}
	c, err := forge.New(forge.Kind(f.kind), f.url, f.repo)
	if err != nil {
		return nil, exitcode.Usagef("%v", err)
	}
	return c, nil
}
