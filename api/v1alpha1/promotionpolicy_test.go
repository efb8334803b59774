package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEvidenceMaxAgeOf: the environment's own evidenceMaxAge, else the
// policy's, else the default; no policy at all is the default too.
func TestEvidenceMaxAgeOf(t *testing.T) {
	t.Parallel()
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	for _, tc := range []struct {
		name string
		pol  *PromotionPolicy
		want time.Duration
	}{
		{"no policy", nil, DefaultEvidenceMaxAge},
		{"nothing set", &PromotionPolicy{}, DefaultEvidenceMaxAge},
		{"the policy's", &PromotionPolicy{EvidenceMaxAge: d(time.Hour)}, time.Hour},
		{"the environment's wins", &PromotionPolicy{EvidenceMaxAge: d(time.Hour),
			Environments: map[string]EnvironmentPolicy{"staging": {EvidenceMaxAge: d(3 * 24 * time.Hour)}}}, 3 * 24 * time.Hour},
		{"another environment's does not count", &PromotionPolicy{
			Environments: map[string]EnvironmentPolicy{"dev": {EvidenceMaxAge: d(time.Minute)}}}, DefaultEvidenceMaxAge},
	} {
		if got := tc.pol.EvidenceMaxAgeOf("staging"); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
