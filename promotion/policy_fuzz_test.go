package promotion

import "testing"

// FuzzParsePolicy: the promotion policy is read from the GitOps repository.
// ParsePolicy must never panic, and an accepted policy answers its
// questions for any environment.
func FuzzParsePolicy(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nallowBoundary: false\nenvironments:\n  production: {cluster: prod-eu}\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nextra: 1\n",
		"{}",
		"- a\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy("throughline-policy.yaml", data)
		if err != nil {
			return
		}
		_ = p.Cluster("production")
		_ = p.Allows("capacity")
		_, _ = p.AllowBoundary(), p.AllowCross()
	})
}
