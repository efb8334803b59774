package cmp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

const stagingChecks = `apiVersion: throughline.dev/v1alpha1
kind: RuntimeChecks
soak: 5m
checks:
  - name: error-ratio
    prometheus:
      query: sum(rate(http_requests_total{job="checkout",code=~"5.."}[5m])) / sum(rate(http_requests_total{job="checkout"}[5m]))
      op: "<"
      threshold: 0.01
`

// TestGenerateCarriesChecks: what Argo CD sees (the plugin's output)
// carries the overlay's checks and the environment's deadlines; changing a
// threshold or a deadline changes it, through the cache (the checks file
// and the policy are inputs of the render); a malformed query is exit 4
// naming the file and field.
func TestGenerateCarriesChecks(t *testing.T) {
	t.Parallel()
	root, cache := copyExample(t), &cmp.Cache{Dir: t.TempDir()}
	const staging = "apps/checkout/overlays/staging"
	file := filepath.Join(root, staging, checkfile.File)
	write := func(p, body string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := func(wantHit bool) string {
		t.Helper()
		res, err := generateAt(t, cache, root, staging)
		if err != nil {
			t.Fatal(err)
		}
		if res.CacheHit != wantHit {
			t.Fatalf("cache hit %v, want %v", res.CacheHit, wantHit)
		}
		return string(res.Manifests)
	}
	write(file, stagingChecks)
	first := gen(false)
	if !strings.Contains(first, `"threshold":0.01`) || !strings.Contains(first, `"observedRevision":"15m0s"`) {
		t.Fatalf("the Acceptance lacks the checks or deadlines:\n%s", first[strings.LastIndex(first, "---"):])
	}
	if again := gen(true); again != first {
		t.Fatal("a cache hit differs from the render")
	}
	write(file, strings.Replace(stagingChecks, "threshold: 0.01", "threshold: 0.5", 1))
	changed := gen(false)
	if changed == first || !strings.Contains(changed, `"threshold":0.5`) {
		t.Fatal("a changed threshold does not change what Argo CD sees")
	}
	pol := filepath.Join(root, "throughline-policy.yaml")
	data, err := os.ReadFile(pol)
	if err != nil {
		t.Fatal(err)
	}
	write(pol, strings.Replace(string(data), "reconcileDeadline: 15m", "reconcileDeadline: 15m\n    rolloutDeadline: 7m", 1))
	if out := gen(false); !strings.Contains(out, `"rollout":"7m0s"`) {
		t.Fatal("a rollout deadline added to the registry is not in the Acceptance")
	}
	write(file, strings.Replace(stagingChecks, "[5m]))", "[5m])", 1))
	_, err = generateAt(t, cache, root, staging)
	if exitcode.Code(err) != exitcode.Invalid || findingOf(t, err).file != staging+"/"+checkfile.File {
		t.Fatalf("malformed query: %v", err)
	}
	// The field (checks[0].prometheus.query) is in the message only.
	msgs := golden.ErrorLines(t, "testdata/checks-query.golden", 1)
	msgs("malformed query", err)
}
