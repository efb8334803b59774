package notifier

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
)

// specChecks reads spec.checks of an Acceptance (nil when it declares
// none). A spec.checks that does not decode is an error (the delivery is
// retried).
func specChecks(u *unstructured.Unstructured) (*v1alpha1.RuntimeChecks, error) {
	m, ok := u.Object["spec"].(map[string]any)
	if !ok || m["checks"] == nil {
		return nil, nil
	}
	raw, err := json.Marshal(m["checks"])
	if err == nil {
		var rc v1alpha1.RuntimeChecks
		if err = json.Unmarshal(raw, &rc); err == nil {
			return &rc, nil
		}
	}
	return nil, fmt.Errorf("reading spec.checks of Acceptance %s/%s: %w", u.GetNamespace(), u.GetName(), err)
}

// runtimeEvidence copies the Acceptance's runtime checks (spec and their
// last evaluations) and soak window into the evidence.
func runtimeEvidence(out *evidence.Record, live *Live) {
	out.Checks = evidence.Checks(live.Checks, live.Status.Checks)
	if live.Checks != nil && live.Checks.Soak.Duration > 0 {
		out.Soak = live.Checks.Soak.Duration.String()
	}
	if live.Status.SoakStartedAt != nil {
		t := live.Status.SoakStartedAt.UTC()
		out.SoakStartedAt = &t
	}
}

// failedChecks names the failing checks of the evidence and their values,
// for a HALTED reason.
func failedChecks(out *evidence.Record) string {
	var failed []string
	for _, c := range out.Checks {
		if c.Verdict == string(v1alpha1.CheckFailed) {
			failed = append(failed, c.String())
		}
	}
	if len(failed) == 0 {
		return "no check of the Acceptance's status is Failed"
	}
	return strings.Join(failed, "; ")
}
