package notifier

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/health/argolua"
)

const verdictHash = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

// verdictObj is an Acceptance at generation 2 declaring verdictHash with the
// given status (nil: none).
func verdictObj(status any) map[string]any {
	obj := map[string]any{
		"apiVersion": "throughline.dev/v1alpha1", "kind": "Acceptance",
		"metadata": map[string]any{"name": "checkout", "namespace": "shop", "generation": int64(2)},
		"spec":     map[string]any{"app": "checkout", "renderedHash": verdictHash},
	}
	if status != nil {
		obj["status"] = status
	}
	return obj
}

func ready(status, reason string) map[string]any {
	return map[string]any{"type": "Ready", "status": status, "reason": reason, "message": "m",
		"lastTransitionTime": "2027-01-15T08:00:00Z", "observedGeneration": int64(2)}
}

// current is a status for generation 2 and verdictHash with the conditions.
func current(conds ...any) map[string]any {
	return map[string]any{"observedGeneration": int64(2), "renderedHash": verdictHash, "conditions": conds}
}

// TestVerdictTable runs one table of Acceptance statuses through the Argo CD
// health script as shipped and through the notifier's decision: Healthy is
// ACCEPTED, Degraded is HALTED, Progressing is wait (503), never anything
// else, and never a Lua error.
func TestVerdictTable(t *testing.T) {
	t.Parallel()
	script, err := argolua.LoadScript(filepath.Join("..", "deploy", "argocd", "argocd-cm-health.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	with := func(m map[string]any, k string, v any) map[string]any {
		m[k] = v
		if v == nil {
			delete(m, k)
		}
		return m
	}
	tests := []struct {
		name   string
		obj    map[string]any
		health string
	}{
		{"no status", verdictObj(nil), "Progressing"},
		{"empty status (observedGeneration defaulted to 0)", verdictObj(map[string]any{"observedGeneration": int64(0)}), "Progressing"},
		{"verified", verdictObj(current(ready("True", "Verified"))), "Healthy"},
		{"verified an older generation", verdictObj(with(current(ready("True", "Verified")), "observedGeneration", int64(1))), "Progressing"},
		{"verified another rendered hash", verdictObj(with(current(ready("True", "Verified")), "renderedHash", "sha256:"+strings.Repeat("d", 64))), "Progressing"},
		{"verified without status.renderedHash", verdictObj(with(current(ready("True", "Verified")), "renderedHash", nil)), "Progressing"},
		{"verified without observedGeneration", verdictObj(with(current(ready("True", "Verified")), "observedGeneration", nil)), "Progressing"},
		{"Ready=True with reason ImageMismatch", verdictObj(current(ready("True", "ImageMismatch"))), "Degraded"},
		{"Ready=True with reason Invalid", verdictObj(current(ready("True", "Invalid"))), "Degraded"},
		{"Ready=True with reason RolloutInProgress", verdictObj(current(ready("True", "RolloutInProgress"))), "Progressing"},
		{"Ready=True without a reason", verdictObj(current(ready("True", ""))), "Progressing"},
		{"Ready=Unknown ImageMismatch", verdictObj(current(ready("Unknown", "ImageMismatch"))), "Degraded"},
		{"rollout in progress", verdictObj(current(ready("False", "RolloutInProgress"))), "Progressing"},
		{"unverifiable", verdictObj(current(ready("False", "Unverifiable"))), "Progressing"},
		{"workload not found", verdictObj(current(ready("False", "WorkloadNotFound"))), "Progressing"},
		{"image mismatch", verdictObj(current(ready("False", "ImageMismatch"))), "Degraded"},
		{"invalid", verdictObj(current(ready("False", "Invalid"))), "Degraded"},
		{"runtime check failed", verdictObj(current(ready("False", "CheckFailed"))), "Degraded"},
		{"runtime check unmeasurable past its deadline", verdictObj(current(ready("False", "CheckUnverifiable"))), "Degraded"},
		{"rollout deadline exceeded", verdictObj(current(ready("False", "DeadlineExceeded"))), "Degraded"},
		{"soaking", verdictObj(current(ready("Unknown", "Soaking"))), "Progressing"},
		{"image mismatch of an older generation", verdictObj(with(current(ready("False", "ImageMismatch")), "observedGeneration", int64(1))), "Progressing"},
		{"no Ready condition", verdictObj(current(map[string]any{"type": "Reconciling", "status": "True", "reason": "RolloutInProgress",
			"lastTransitionTime": "2027-01-15T08:00:00Z"})), "Progressing"},
		{"first Ready condition wins", verdictObj(current(ready("True", "Verified"), ready("False", "ImageMismatch"))), "Healthy"},
		{"conditions empty", verdictObj(current()), "Progressing"},
		{"conditions an object", verdictObj(with(current(), "conditions", map[string]any{"Ready": ready("True", "Verified")})), "Progressing"},
		{"conditions a string", verdictObj(with(current(), "conditions", "Ready")), "Progressing"},
		{"conditions a number", verdictObj(with(current(), "conditions", 3)), "Progressing"},
		{"a condition that is a number", verdictObj(current(ready("True", "Verified"), 7)), "Progressing"},
		{"a condition that is a string", verdictObj(current("Ready", ready("True", "Verified"))), "Progressing"},
		{"Ready's status a boolean", verdictObj(current(with(ready("", "ImageMismatch"), "status", true))), "Progressing"},
		{"Ready's reason a number", verdictObj(current(with(ready("True", ""), "reason", 1))), "Progressing"},
		{"observedGeneration a string", verdictObj(with(current(ready("True", "Verified")), "observedGeneration", "2")), "Progressing"},
		{"status a string", verdictObj("Verified"), "Progressing"},
		{"status a list", verdictObj([]any{ready("True", "Verified")}), "Progressing"},
		{"no generation, verified", with(verdictObj(with(current(ready("True", "Verified")), "observedGeneration", nil)), "metadata",
			map[string]any{"name": "checkout", "namespace": "shop"}), "Healthy"},
		{"no spec.renderedHash", with(verdictObj(current(ready("True", "Verified"))), "spec", map[string]any{"app": "checkout"}), "Progressing"},
		{"neither rendered hash", with(verdictObj(with(current(ready("True", "Verified")), "renderedHash", nil)), "spec",
			map[string]any{"app": "checkout"}), "Healthy"},
	}
	verdicts := map[string]Verdict{"Healthy": VerdictAccept, "Degraded": VerdictHalt, "Progressing": VerdictWait}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, msg, err := argolua.Run(script, tt.obj)
			if err != nil {
				t.Fatalf("Argo CD health: %v", err)
			}
			if got != tt.health {
				t.Errorf("Argo CD health = %s (%s), want %s", got, msg, tt.health)
			}
			verdict := VerdictWait // a status the notifier cannot read: it retries
			if live, err := LiveFrom(&unstructured.Unstructured{Object: tt.obj}); err == nil {
				verdict, _ = Judge(live)
			}
			if verdict != verdicts[tt.health] {
				t.Errorf("notifier verdict = %s, want %s (Argo CD %s)", verdict, verdicts[tt.health], tt.health)
			}
		})
	}
}
