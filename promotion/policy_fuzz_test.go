package promotion

import (
	"os"
	"testing"

	"github.com/throughline-dev/throughline/environment"
)

// FuzzParsePolicy: the promotion policy is read from the GitOps repository.
// ParsePolicy must never panic, and an accepted policy answers its
// questions for any environment.
func FuzzParsePolicy(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nallowBoundary: false\nenvironments:\n  production: {cluster: prod-eu}\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nextra: 1\n",
		"{}",
		"- a\n",
		"apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n  a: {paths: ['x/*/a']}\n  b: {paths: ['x/*/*']}\n",
	} {
		f.Add([]byte(seed))
	}
	if data, err := os.ReadFile("../examples/gitops-env/" + PolicyFile); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy("throughline-policy.yaml", data)
		if err != nil {
			return
		}
		_ = p.Cluster("production")
		_ = p.Allows("capacity")
		_, _ = p.AllowBoundary(), p.AllowCross()
		// An accepted policy's registry is usable: every path belongs to
		// at most one environment, and each environment's own path of an
		// app resolves back to it.
		reg, err := environment.New(PolicyFile, p)
		if err != nil {
			t.Fatalf("ParsePolicy accepted a registry environment.New refuses: %v", err)
		}
		for _, name := range reg.Names() {
			e, _ := reg.Get(name)
			if path, ok := e.Path("checkout"); ok {
				if _, err := reg.Resolve(environment.Claim{App: "checkout", Environment: name, Path: path}); err != nil {
					t.Fatalf("environment %s's own path %s: %v", name, path, err)
				}
			}
		}
	})
}
