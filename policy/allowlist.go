package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	sigyaml "sigs.k8s.io/yaml"
)

// AllowListFile is the allow-list's file name at the repository root.
const AllowListFile = "throughline-allowlist.yaml"

// AllowListKind and AllowListAPIVersion identify the allow-list document.
const (
	AllowListAPIVersion = "throughline.dev/v1alpha1"
	AllowListKind       = "AllowList"
)

// AllowList is the only source of exceptions to the pin rule. Each entry is
// a glob matched against the whole image reference as written (path.Match:
// "*" does not cross "/") and must give a reason.
type AllowList struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Images     []AllowedImage `json:"images"`
}

// AllowedImage is one exception.
type AllowedImage struct {
	Pattern string `json:"pattern"`
	Reason  string `json:"reason"`
}

// Exception is an allow-list entry that a render used.
type Exception struct {
	Image   string `json:"image"`
	Pattern string `json:"pattern"`
	Reason  string `json:"reason"`
	Object  string `json:"object,omitempty"`
	Field   string `json:"field,omitempty"`
}

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

// Match returns the first entry whose pattern matches image.
func (a *AllowList) Match(image string) (AllowedImage, bool) {
	if a == nil {
		return AllowedImage{}, false
	}
	for _, im := range a.Images {
		if ok, err := path.Match(im.Pattern, image); err == nil && ok {
			return im, true
		}
	}
	return AllowedImage{}, false
}

// ErrNoAllowList is returned by loaders when the repository has none.
var ErrNoAllowList = errors.New("no allow-list")
