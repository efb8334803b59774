package v1alpha1

import (
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AllowList is the repository's allow-list (throughline-allowlist.yaml), the
// only source of exceptions to the pin rule. Each entry is a glob matched
// against the whole image reference as written (path.Match: "*" does not
// cross "/") and must give a reason. policy.ParseAllowList decodes and checks
// it.
type AllowList struct {
	metav1.TypeMeta `json:",inline"`

	Images []AllowedImage `json:"images"`
}

// AllowedImage is one exception.
type AllowedImage struct {
	Pattern string `json:"pattern"`
	Reason  string `json:"reason"`
}

// Match returns the first entry whose pattern matches image (none on a nil
// AllowList).
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
