package environment

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/window"
)

// validName is the shape of an environment's and an app's name (a DNS
// label: it becomes part of paths, branch names and Kubernetes names).
var validName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func checkTopLevel(p *v1alpha1.PromotionPolicy) error {
	if p.AllowedSigners != "" {
		if err := checkRelative(p.AllowedSigners); err != nil {
			return fmt.Errorf("allowedSigners: %w", err)
		}
	}
	if p.EvidenceSigners != "" {
		if err := checkRelative(p.EvidenceSigners); err != nil {
			return fmt.Errorf("evidenceSigners: %w", err)
		}
	}
	if p.EvidenceMaxAge != nil && p.EvidenceMaxAge.Duration <= 0 {
		return fmt.Errorf("evidenceMaxAge: %s: must be positive", p.EvidenceMaxAge.Duration)
	}
	return nil
}

// checkEnvironment checks one environment's fields.
func checkEnvironment(name string, e v1alpha1.EnvironmentPolicy) error {
	field := "environments." + name
	if !validName.MatchString(name) {
		return fmt.Errorf("%s: %q is not a valid environment name (lower-case letters, digits and '-', at most 63)", field, name)
	}
	for i, p := range e.Paths {
		if err := checkPattern(p); err != nil {
			return fmt.Errorf("%s.paths[%d]: %q: %w", field, i, p, err)
		}
	}
	for app, p := range e.Apps {
		if !validName.MatchString(app) {
			return fmt.Errorf("%s.apps: %q is not a valid app name", field, app)
		}
		if err := checkRelative(p); err != nil {
			return fmt.Errorf("%s.apps.%s: %q: %w", field, app, p, err)
		}
		if strings.ContainsAny(p, `*?[\`) {
			return fmt.Errorf("%s.apps.%s: %q: an explicit path has no pattern characters", field, app, p)
		}
	}
	if err := checkPatterns(e.Namespaces, false); err != nil {
		return fmt.Errorf("%s.namespaces%w", field, err)
	}
	if err := checkPatterns(e.Controllers, true); err != nil {
		return fmt.Errorf("%s.controllers%w", field, err)
	}
	if e.EvidenceMaxAge != nil && e.EvidenceMaxAge.Duration <= 0 {
		return fmt.Errorf("%s.evidenceMaxAge: %s: must be positive", field, e.EvidenceMaxAge.Duration)
	}
	if err := checkTrust(field, e.Trust); err != nil {
		return err
	}
	if err := checkSource(field, e.Source); err != nil {
		return err
	}
	if err := checkBinding(field+".binding", e.Binding); err != nil {
		return err
	}
	if e.Binding != nil && e.Binding.Pinned && e.Source != nil {
		return fmt.Errorf("%s.binding.pinned: the environment deploys an OCI artifact (source): a pin is a Git commit", field)
	}
	if _, err := window.Compile(name, e); err != nil {
		return err
	}
	return checkApprovals(field, e)
}

func checkApprovals(field string, e v1alpha1.EnvironmentPolicy) error {
	seen := map[string]bool{}
	for i, a := range e.Approvers {
		if strings.TrimSpace(a) == "" || strings.ContainsAny(a, " \t\n,") {
			return fmt.Errorf("%s.approvers[%d]: %q is not a principal of the allowed-signers file", field, i, a)
		}
		if seen[a] {
			return fmt.Errorf("%s.approvers[%d]: %q is listed twice", field, i, a)
		}
		seen[a] = true
	}
	switch {
	case e.MinApprovals < 0:
		return fmt.Errorf("%s.minApprovals: %d: must not be negative", field, e.MinApprovals)
	case e.MinApprovals > len(e.Approvers):
		return fmt.Errorf("%s.minApprovals: %d, but %d approvers are listed", field, e.MinApprovals, len(e.Approvers))
	case e.ReconcileDeadline != nil && e.ReconcileDeadline.Duration <= 0:
		return fmt.Errorf("%s.reconcileDeadline: %s: must be positive", field, e.ReconcileDeadline.Duration)
	case e.RolloutDeadline != nil && e.RolloutDeadline.Duration <= 0:
		return fmt.Errorf("%s.rolloutDeadline: %s: must be positive", field, e.RolloutDeadline.Duration)
	}
	return nil
}

// checkPatterns checks a list of path.Match patterns (files: also
// relative paths); the error starts with the index.
func checkPatterns(pats []string, files bool) error {
	for i, p := range pats {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("[%d]: empty", i)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("[%d]: %q: %w", i, p, err)
		}
		if files {
			if err := checkRelative(p); err != nil {
				return fmt.Errorf("[%d]: %q: %w", i, p, err)
			}
		}
	}
	return nil
}

// checkPattern checks an overlay path pattern: a relative path with
// exactly one wildcard segment and no other pattern characters.
func checkPattern(p string) error {
	if err := checkRelative(p); err != nil {
		return err
	}
	stars := 0
	for _, s := range strings.Split(path.Clean(p), "/") {
		if s == Wildcard {
			stars++
			continue
		}
		if strings.ContainsAny(s, `*?[\`) {
			return fmt.Errorf("segment %q: only a whole %q segment may be a pattern (the app's name)", s, Wildcard)
		}
	}
	if stars != 1 {
		return fmt.Errorf("a path pattern has exactly one %q segment, the app's name (for one app's path use apps)", Wildcard)
	}
	return nil
}

var errNotRelative = errors.New("must be a relative path inside the repository")

func checkRelative(p string) error {
	c := path.Clean(p)
	if p == "" || path.IsAbs(p) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return errNotRelative
	}
	return nil
}

// claim is one overlay path entry of an environment, for the overlap check.
type claim struct {
	env, field, pattern string
}

func (r *Registry) claims() []claim {
	var cs []claim
	for _, name := range r.names {
		e := r.envs[name]
		for _, a := range sortedKeys(e.Apps) {
			cs = append(cs, claim{env: name, field: fmt.Sprintf("environments.%s.apps.%s", name, a), pattern: path.Clean(e.Apps[a])})
		}
		for i, p := range e.Paths {
			cs = append(cs, claim{env: name, field: fmt.Sprintf("environments.%s.paths[%d]", name, i), pattern: path.Clean(p)})
		}
	}
	return cs
}

// checkOverlaps refuses a path that two environments (or two entries of
// one environment) claim: every path belongs to one environment and app.
func (r *Registry) checkOverlaps() error {
	cs := r.claims()
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			if overlap(cs[i].pattern, cs[j].pattern) {
				return fmt.Errorf("%s: %q and %s: %q claim the same overlay path: a path belongs to one environment",
					cs[j].field, cs[j].pattern, cs[i].field, cs[i].pattern)
			}
		}
	}
	return nil
}

// overlap reports whether one path matches both patterns (wildcard
// segments match any segment).
func overlap(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if as[i] != bs[i] && as[i] != Wildcard && bs[i] != Wildcard {
			return false
		}
	}
	return true
}
