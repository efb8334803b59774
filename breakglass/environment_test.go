package breakglass

import (
	"context"
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
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

// wantEnvRefusal fails unless err is the environment refusal rule (exit
// 3) naming the registry; what it says is in the golden file.
func wantEnvRefusal(t *testing.T, err error, rule string) {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused || re.Rule != rule || re.File != promotion.PolicyFile {
		t.Fatalf("want refusal %s of %s (exit 3), got exit %d: %v", rule, promotion.PolicyFile, exitcode.Code(err), err)
	}
}

// TestWritebackEnvironmentIdentity: the write-back's overlay is the
// registry's path of the record's app in its environment: another
// environment's path is refused, none given is the registry's.
func TestWritebackEnvironmentIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files := map[string]string{promotion.PolicyFile: webRegistry}
	for k, v := range webFiles {
		files[k] = v
	}
	r, src := gitopsRepo(t, files)
	record := golden.ErrorLines(t, "testdata/writeback-environment.golden", 2)
	for _, tc := range []struct{ name, env, path, rule string }{
		{"production's overlay for a staging pause", "staging", "apps/web/overlays/production", environment.RuleMismatch},
		{"an environment the registry does not know", "qa", "apps/web/overlays/production", environment.RuleUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := pausedRecord(src)
			rec.Environment = tc.env
			_, err := ProposeWriteback(ctx, r, rec, WritebackOptions{Base: src, Path: tc.path}, nil)
			wantEnvRefusal(t, err, tc.rule)
			record(tc.name, err)
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
