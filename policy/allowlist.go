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
// of exceptions to the pin rule.
type AllowList = v1alpha1.AllowList

// AllowedImage is one exception of the allow-list.
type AllowedImage = v1alpha1.AllowedImage

// Exception is an allow-list entry that a render used (it is declared in the
// Acceptance's spec).
type Exception = v1alpha1.Exception

// ParseAllowList decodes an allow-list strictly: unknown fields, a missing
// reason and malformed patterns are errors naming file and field.
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
		if strings.TrimSpace(im.Reason) == "" {
			return nil, fmt.Errorf("%s: images[%d].reason: an exception needs a reason", file, i)
		}
	}
	return &a, nil
}

// ErrNoAllowList is returned by loaders when the repository has none.
var ErrNoAllowList = errors.New("no allow-list")
