package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// AllowListFile is the allow-list's file name at the repository root.
const AllowListFile = "throughline-allowlist.yaml"

// AllowListKind and AllowListAPIVersion identify the allow-list document.
const (
	AllowListAPIVersion = v1alpha1.APIVersion
	AllowListKind       = v1alpha1.AllowListKind
)

// AllowList is the allow-list document (v1alpha1.AllowList): the only source
// of exceptions to the pin rule and to the Secret rule.
type AllowList = v1alpha1.AllowList

// AllowedImage is one exception of the allow-list to the pin rule.
type AllowedImage = v1alpha1.AllowedImage

// AllowedSecret is one exception of the allow-list to the Secret rule.
type AllowedSecret = v1alpha1.AllowedSecret

// Exception is an allow-list entry that a render used (it is declared in the
// Acceptance's spec).
type Exception = v1alpha1.Exception

// ParseAllowList decodes an allow-list strictly: unknown fields, a missing
// reason, malformed patterns and environments (empty, named twice, a
// pattern) are errors naming file and field.
func ParseAllowList(data []byte, file string) (*AllowList, error) {
	var a AllowList
	if err := sigyaml.UnmarshalStrict(data, &a); err != nil {
		return nil, fmt.Errorf("%s: parsing allow-list: %w", file, err)
	}
	if a.APIVersion != AllowListAPIVersion || a.Kind != AllowListKind {
		return nil, fmt.Errorf("%s: want apiVersion %s and kind %s, got %q and %q", file, AllowListAPIVersion, AllowListKind, a.APIVersion, a.Kind)
	}
	for i, im := range a.Images {
		if strings.TrimSpace(im.Pattern) == "" {
			return nil, fmt.Errorf("%s: images[%d].pattern: empty", file, i)
		}
		if _, err := path.Match(im.Pattern, ""); err != nil {
			return nil, fmt.Errorf("%s: images[%d].pattern %q: %w", file, i, im.Pattern, err)
		}
		if err := checkEnvironments(im.Environments, false); err != nil {
			return nil, fmt.Errorf("%s: images[%d].%w", file, i, err)
		}
		if strings.TrimSpace(im.Reason) == "" {
			return nil, fmt.Errorf("%s: images[%d].reason: an exception needs a reason", file, i)
		}
	}
	for i, s := range a.Secrets {
		if strings.TrimSpace(s.Name) == "" || s.Name != strings.TrimSpace(s.Name) {
			return nil, fmt.Errorf("%s: secrets[%d].name: empty or padded with spaces (the Secret's exact name)", file, i)
		}
		if s.Namespace != strings.TrimSpace(s.Namespace) {
			return nil, fmt.Errorf("%s: secrets[%d].namespace %q: padded with spaces", file, i, s.Namespace)
		}
		if err := checkEnvironments(s.Environments, true); err != nil {
			return nil, fmt.Errorf("%s: secrets[%d].%w", file, i, err)
		}
		if strings.TrimSpace(s.Reason) == "" {
			return nil, fmt.Errorf("%s: secrets[%d].reason: an exception needs a reason", file, i)
		}
	}
	return &a, nil
}

// checkEnvironments checks the environments of one entry: absent (nil)
// means every environment unless required; a present list is not empty,
// names each environment once, exactly (no pattern, no spaces).
func checkEnvironments(envs []string, required bool) error {
	if envs == nil && !required {
		return nil
	}
	if len(envs) == 0 {
		if required {
			return errors.New("environments: required (a Secret exception holds in the environments it names)")
		}
		return errors.New("environments: empty list (omit the field for every environment)")
	}
	seen := map[string]int{}
	for j, e := range envs {
		switch {
		case strings.TrimSpace(e) == "":
			return fmt.Errorf("environments[%d]: empty", j)
		case strings.ContainsAny(e, " \t\r\n*?[]/\\"):
			return fmt.Errorf("environments[%d] %q: an environment is an exact name (no spaces, patterns or slashes)", j, e)
		}
		if k, dup := seen[e]; dup {
			return fmt.Errorf("environments[%d] %q: named twice (also environments[%d])", j, e, k)
		}
		seen[e] = j
	}
	return nil
}

// ErrNoAllowList is returned by loaders when the repository has none.
var ErrNoAllowList = errors.New("no allow-list")

// Environment is the environment a render is checked in by the directory
// convention of a repository WITHOUT an environment registry: env when
// given, else the directory name of the root-relative directory rel when
// its parent is "overlays" (apps/checkout/overlays/dev: dev), else "" (no
// environment: only unscoped exceptions hold). With a registry the
// environment comes only from the registry: a contributor chooses
// directory names, so callers apply this only when told to
// (acceptance.Request.DirectoryEnvironment, overlay.PinPolicy).
func Environment(env, rel string) string {
	if env != "" {
		return env
	}
	if path.Base(path.Dir(rel)) == "overlays" {
		return path.Base(rel)
	}
	return ""
}
