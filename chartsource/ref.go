package chartsource

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
)

// Rules of the refusals of this package (exit 3).
const (
	// RuleUnpinnedChart: a remote chart has no entry in its lock file.
	RuleUnpinnedChart = "unpinned-chart"
	// RuleChartDigestMismatch: the package served is not the one pinned (or
	// an HTTP repository's index names another digest than its package).
	RuleChartDigestMismatch = "chart-digest-mismatch"
	// RuleFloatingChartVersion: a chart version that is not one exact
	// semantic version (a range floats). The policy package refuses the
	// same in kustomizations under the same rule.
	RuleFloatingChartVersion = "floating-chart-version"
	// RuleChartNotChart: the OCI manifest pinned is not a Helm chart.
	RuleChartNotChart = "chart-not-a-chart"
	// RuleChartTooLarge: a package, manifest or index above its cap.
	RuleChartTooLarge = "chart-too-large"
	// RuleChartForeignHost: a chart repository points (index url or
	// redirect) to another host or scheme than its own.
	RuleChartForeignHost = "chart-foreign-host"
	// RuleChartVersionMoved: a chart version now resolves to another digest
	// than the one recorded or pinned.
	RuleChartVersionMoved = "chart-version-moved"
)

// Kinds of chart repository.
const (
	KindOCI  = "oci"
	KindHTTP = "http"
)

// Ref names one version of a remote chart: Repo is "oci://host/path" or
// "https://host/path" (http:// only for a loopback host), Name the chart's
// name, Version one exact semantic version.
type Ref struct {
	Repo    string `json:"repo"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// String is the one-string form: oci://host/path/name:version or
// https://host/path/name:version.
func (r Ref) String() string { return strings.TrimSuffix(r.Repo, "/") + "/" + r.Name + ":" + r.Version }

// Kind is KindOCI or KindHTTP (by the repository's scheme).
func (r Ref) Kind() string {
	if strings.HasPrefix(r.Repo, "oci://") {
		return KindOCI
	}
	return KindHTTP
}

// OCIReference is host/path/name (without scheme), the repository of an
// OCI chart.
func (r Ref) OCIReference() string {
	return strings.TrimSuffix(strings.TrimPrefix(r.Repo, "oci://"), "/") + "/" + r.Name
}

// OCITag is the tag a version is pushed under: Helm writes "+" as "_" (a tag
// cannot hold "+").
func (r Ref) OCITag() string { return strings.ReplaceAll(r.Version, "+", "_") }

// IsRemote reports whether repo names a remote chart repository this
// package fetches from (oci://, https://, http://); a local chart (empty,
// file://, a path) is not.
func IsRemote(repo string) bool {
	for _, p := range []string{"oci://", "https://", "http://"} {
		if strings.HasPrefix(strings.ToLower(repo), p) {
			return true
		}
	}
	return false
}

// ParseRef parses the one-string form of [Ref.String]: the last path segment
// is name:version, the rest the repository.
func ParseRef(s string) (Ref, error) {
	i := strings.LastIndex(s, "/")
	if i < 0 || !IsRemote(s) {
		return Ref{}, fmt.Errorf("chart reference %q: want oci://host/path/name:version or https://host/path/name:version", s)
	}
	name, version, ok := strings.Cut(s[i+1:], ":")
	if !ok {
		return Ref{}, fmt.Errorf("chart reference %q: the last segment must be name:version", s)
	}
	r := Ref{Repo: s[:i], Name: name, Version: version}
	if err := r.Validate(); err != nil {
		return Ref{}, fmt.Errorf("chart reference %q: %w", s, err)
	}
	return r, nil
}

var chartName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)

// errFloating marks a version that is not exact (a range): callers turn it
// into a refusal or an invalid field.
var errFloating = errors.New("is not one exact semantic version (ranges float; pin an exact version)")

// Validate checks the repository URL, the name and that the version is
// exact. A range wraps errFloating (see [IsFloating]).
func (r Ref) Validate() error {
	var errs []error
	if err := validRepo(r.Repo); err != nil {
		errs = append(errs, err)
	}
	if !chartName.MatchString(r.Name) || len(r.Name) > 128 {
		errs = append(errs, fmt.Errorf("name %q: want a chart name (lowercase letters, digits, '-', '_', '.')", r.Name))
	}
	if err := ExactVersion(r.Version); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// IsFloating reports whether err says a version is a range.
func IsFloating(err error) bool { return errors.Is(err, errFloating) }

// ExactVersion accepts one exact semantic version (a leading "v" allowed,
// as Helm does) and refuses a range (^1.2, ~1.2, >=1, 1.x, *, 1.2).
func ExactVersion(v string) error {
	if v == "" {
		return errors.New("version is empty: pin an exact version")
	}
	if _, err := semver.Parse(strings.TrimPrefix(v, "v")); err != nil {
		return fmt.Errorf("version %q %w", v, errFloating)
	}
	return nil
}

// validRepo checks a repository URL: oci:// or https:// with a host, no
// user info, query or fragment; http:// only for a loopback host.
func validRepo(repo string) error {
	u, err := url.Parse(repo)
	if err != nil {
		return fmt.Errorf("repo %q: %w", repo, err)
	}
	switch {
	case u.Scheme != "oci" && u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("repo %q: want oci://, https:// (or http:// to a loopback host)", repo)
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return fmt.Errorf("repo %q: want scheme://host[/path] without credentials, query or fragment", repo)
	case u.Scheme == "http" && !isLoopback(u.Host):
		return fmt.Errorf("repo %q: plain http:// only to a loopback host; use https://", repo)
	case u.Scheme == "oci" && u.Path == "":
		return fmt.Errorf("repo %q: want oci://host/path (the chart name is appended)", repo)
	case strings.Contains(u.Path, "//") || strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/.."):
		return fmt.Errorf("repo %q: the path must be clean", repo)
	}
	return nil
}
