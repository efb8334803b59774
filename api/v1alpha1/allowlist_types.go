package v1alpha1

import (
	"path"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AllowList is the repository's allow-list (throughline-allowlist.yaml), the
// only source of exceptions to the pin rule and to the Secret rule. Each
// image entry is a glob matched against the whole image reference as written
// (path.Match: "*" does not cross "/"); each Secret entry names one Secret.
// Every entry must give a reason and may be scoped to environments.
// policy.ParseAllowList decodes and checks it.
type AllowList struct {
	metav1.TypeMeta `json:",inline"`

	Images []AllowedImage `json:"images"`
	// Secrets are the Secrets that may carry data or stringData in the
	// rendered desired state (every other Secret enters it as a reference:
	// ExternalSecret, SealedSecret, an encrypted file).
	Secrets []AllowedSecret `json:"secrets,omitempty"`
}

// AllowedImage is one exception to the pin rule.
type AllowedImage struct {
	Pattern string `json:"pattern"`
	// Environments scope the exception; absent, it holds in every
	// environment.
	Environments []string `json:"environments,omitempty"`
	Reason       string   `json:"reason"`
}

// AllowedSecret is one exception to the Secret rule: the Secret name (in
// namespace, any namespace when empty) may carry data or stringData in the
// listed environments, which are required.
type AllowedSecret struct {
	Name         string   `json:"name"`
	Namespace    string   `json:"namespace,omitempty"`
	Environments []string `json:"environments"`
	Reason       string   `json:"reason"`
}

// Match returns the first image entry whose pattern matches image and whose
// environments hold env (none on a nil AllowList). An entry scoped to
// environments never matches an empty env.
func (a *AllowList) Match(image, env string) (AllowedImage, bool) {
	if a == nil {
		return AllowedImage{}, false
	}
	for _, im := range a.Images {
		if !inScope(im.Environments, env) {
			continue
		}
		if ok, err := path.Match(im.Pattern, image); err == nil && ok {
			return im, true
		}
	}
	return AllowedImage{}, false
}

// MatchSecret returns the first Secret entry that names the Secret
// namespace/name in env (none on a nil AllowList or an empty env).
func (a *AllowList) MatchSecret(namespace, name, env string) (AllowedSecret, bool) {
	if a == nil || env == "" {
		return AllowedSecret{}, false
	}
	for _, s := range a.Secrets {
		if s.Name == name && (s.Namespace == "" || s.Namespace == namespace) && slices.Contains(s.Environments, env) {
			return s, true
		}
	}
	return AllowedSecret{}, false
}

// inScope reports whether an entry scoped to envs holds in env: absent
// environments hold everywhere, listed ones only in a named environment.
func inScope(envs []string, env string) bool {
	if len(envs) == 0 {
		return true
	}
	return env != "" && slices.Contains(envs, env)
}
