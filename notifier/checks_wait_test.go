package notifier

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/promotion"
)

// TestRuntimeChecksWait (issue 20): while the verifier soaks the runtime
// checks, or cannot measure one (Prometheus down: Ready Unknown, reason
// Unverifiable), the images are verified but the notifier decides nothing:
// it answers 503 and writes nothing, whatever Argo CD's health says.
func TestRuntimeChecksWait(t *testing.T) {
	t.Parallel()
	soak := metav1.NewTime(t0.Add(20 * time.Minute))
	checkPhase := func(reason, msg string, check v1alpha1.CheckStatus) *Live {
		l := liveWith("checkout", metav1.ConditionUnknown, reason, msg, health.Verified)
		l.Status.VerifiedAt, l.Status.SoakStartedAt, l.Status.Checks = nil, &soak, []v1alpha1.CheckStatus{check}
		return l
	}
	for _, c := range []struct {
		name, health, reason string
		live                 *Live
	}{
		{"Prometheus down", "Progressing", "Unverifiable", checkPhase(v1alpha1.ReasonUnverifiable,
			"check error-ratio: querying Prometheus: connection refused",
			v1alpha1.CheckStatus{Name: "error-ratio", Verdict: v1alpha1.CheckUnverifiable, LastEvaluated: soak, Message: "querying Prometheus: connection refused"})},
		{"Prometheus down, Argo CD says Healthy", "Healthy", "Unverifiable", checkPhase(v1alpha1.ReasonUnverifiable, "check error-ratio: querying Prometheus",
			v1alpha1.CheckStatus{Name: "error-ratio", Verdict: v1alpha1.CheckUnverifiable, LastEvaluated: soak})},
		{"soaking", "Progressing", "Soaking", checkPhase(v1alpha1.ReasonSoaking, "images verified, 1 checks green; soak until 2027-01-15T09:00:00Z",
			v1alpha1.CheckStatus{Name: "error-ratio", Verdict: v1alpha1.CheckPassed, Value: "0.001", LastEvaluated: soak})},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			f.live.set("checkout", c.live)
			tip := f.tip()
			code, rep := f.argo(argoBody(f.desired["checkout"], c.health))
			if code != 503 || rep.Result != resultWait || !strings.Contains(rep.Reason, c.reason) {
				t.Fatalf("%d %+v; want 503 wait naming %s", code, rep, c.reason)
			}
			if f.tip() != tip || f.checkoutRecord().State != promotion.Reconciling {
				t.Fatalf("written %v, state %s", f.tip() != tip, f.checkoutRecord().State)
			}
		})
	}
}
