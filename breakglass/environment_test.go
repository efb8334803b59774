package breakglass

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
)

const webRegistry = `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
environments:
  staging:
    paths: ["apps/*/overlays/staging"]
    namespaces: ["*-staging"]
  production:
    paths: ["apps/*/overlays/production"]
    namespaces: ["*-production"]
`

// wantEnvRefusal fails unless err is an environment refusal (exit 3)
// naming the registry and saying text.
func wantEnvRefusal(t *testing.T, err error, text string) {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused ||
		(re.Rule != environment.RuleMismatch && re.Rule != environment.RuleUnknown) {
		t.Fatalf("want an environment refusal (exit 3), got exit %d: %v", exitcode.Code(err), err)
	}
	if !strings.Contains(err.Error(), text) || !strings.Contains(err.Error(), promotion.PolicyFile) {
		t.Errorf("refusal %q does not say %q and name %s", err, text, promotion.PolicyFile)
	}
}

// TestWritebackEnvironmentIdentity: the write-back's overlay is the
// registry's path of the record's app in its environment: another
// environment's path is refused, none given is the registry's.
func TestWritebackEnvironmentIdentity(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{promotion.PolicyFile: webRegistry}
	for k, v := range webFiles {
		files[k] = v
	}
	r, src := gitopsRepo(t, files)
	for _, tc := range []struct{ name, env, path, text string }{
		{"production's overlay for a staging pause", "staging", "apps/web/overlays/production", "environment production's, not staging's"},
		{"an environment the registry does not know", "qa", "apps/web/overlays/production", `environment "qa" is not in the registry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := pausedRecord(src)
			rec.Environment = tc.env
			_, err := ProposeWriteback(ctx, r, rec, WritebackOptions{Base: src, Path: tc.path}, nil)
			wantEnvRefusal(t, err, tc.text)
		})
	}
	reg, err := promotion.ReadRegistry(ctx, r, src)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := WritebackPath(reg, "web", "production", ""); err != nil || p != "apps/web/overlays/production" {
		t.Fatalf("the registry's path: %q %v", p, err)
	}
}
