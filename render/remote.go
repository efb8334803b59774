package render

import (
	"net/url"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/resource"
)

// IsRemote reports whether a kustomization entry names a location outside
// the repository. It is true whenever kustomize's own loader would fetch or
// clone the entry (KustomizeRemote) and, beyond that, for entries that only
// look remote: a first path element that is a host name
// (gitlab.example.test/group/repo) or a ?ref= / ?version= query. Callers
// that can see the repository treat those look-alikes as local when the path
// exists there.
func IsRemote(entry string) bool {
	return KustomizeRemote(entry) || looksRemote(entry)
}

// KustomizeRemote reports whether kustomize's loader (v0.21) would reach the
// network or run git for entry, decided the way kustomize decides it, plus
// every spelling git itself accepts as a remote:
//   - url.Parse gives an http or https scheme (any case): Loader.Load fetches
//     it with an HTTP GET (kustomize's IsRemoteFile);
//   - kustomize's git parser accepts it (git::, scp-form user@host:org/repo,
//     github.com/org/repo, ssh://, file://, https://host/org/repo.git,
//     ?ref=): Loader.New clones it. The parser is kustomize's own, reached
//     through resource.Origin.Append, so the two cannot drift apart;
//   - any other "scheme://" (case-insensitive), a "git::" prefix, or the
//     scp-form [user@]host:path that git would hand to ssh.
func KustomizeRemote(entry string) bool {
	if u, err := url.Parse(entry); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return true
	}
	if kustomizeRepoSpec(entry) {
		return true
	}
	lower := strings.ToLower(entry)
	if strings.HasPrefix(lower, "git::") || schemeURL.MatchString(entry) {
		return true
	}
	return scpForm.MatchString(entry)
}

// schemeURL is any "scheme://" at the start of an entry.
var schemeURL = regexp.MustCompile(`^\s*[A-Za-z][A-Za-z0-9+.-]*://`)

// scpForm is git's scp-like syntax: [user@]host:path, with no slash before
// the colon (a colon after a slash is part of a local path for git too), and
// a host that has a dot or a user (a bare "key:value" is a file name).
var scpForm = regexp.MustCompile(`^\s*(?:[^/@:\s]+@[^/:\s]+|[^/@:\s]*\.[^/@:\s]*):`)

// kustomizeRepoSpec reports whether kustomize's git parser
// (internal/git.NewRepoSpecFromURL) accepts entry as a repository: exported
// through resource.Origin.Append, which records the repository it parsed.
func kustomizeRepoSpec(entry string) (repo bool) {
	defer func() {
		if recover() != nil {
			repo = true // a parser that panics on it is not a local path
		}
	}()
	return (&resource.Origin{}).Append(entry).Repo != ""
}

// looksRemote is the look-alike part of IsRemote: a host-like first element
// or a ref query.
func looksRemote(entry string) bool {
	if u, err := url.Parse(entry); err == nil && u.RawQuery != "" {
		if q, err := url.ParseQuery(u.RawQuery); err != nil || q.Has("ref") || q.Has("version") || strings.Contains(u.RawQuery, "ref=") {
			return true
		}
	}
	first, _, found := strings.Cut(path.Clean(entry), "/")
	return found && strings.Contains(first, ".") && first != "." && first != ".." && !strings.HasPrefix(first, ".")
}
