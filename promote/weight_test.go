package promote_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRecordPathStaysLight keeps what reads and writes records, evidence
// and the PR gate free of the Kubernetes client and controller-runtime:
// they run in CI jobs and the CLI on a Git checkout, never against a
// cluster. The imageID match they share lives in the leaf package imageid
// (before, evidence reached client-go through health.MatchImageID and every
// package here pulled in about 1,150 packages).
func TestRecordPathStaysLight(t *testing.T) {
	t.Parallel()
	pkgs := []string{"promotion", "evidence", "ledger", "delivery", "promote", "gate", "gitops", "imageid", "chainview", "breakglass"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/throughline-dev/throughline/"+p)
	}
	cmd := exec.CommandContext(t.Context(), "go", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	for _, dep := range strings.Split(string(out), "\n") {
		for _, banned := range []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("the record path (%s) imports %s", strings.Join(pkgs, ", "), dep)
			}
		}
	}
}
