package health

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health/argolua"
)

// healthScript reads the Lua script from the argocd-cm patch the install
// ships, so the test tests what ships.
func healthScript(t *testing.T) string {
	t.Helper()
	script, err := argolua.LoadScript(filepath.Join("..", "deploy", "argocd", "argocd-cm-health.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// runHealth runs the script on obj and returns (status, message).
func runHealth(t *testing.T, script string, obj map[string]any) (string, string) {
	t.Helper()
	st, msg, err := argolua.Run(script, obj)
	if err != nil {
		t.Fatal(err)
	}
	return st, msg
}

const renderedHash = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

func acceptanceWith(gen int64, st *v1alpha1.AcceptanceStatus) *unstructured.Unstructured {
	u := NewAcceptance()
	u.SetNamespace("shop")
	u.SetName("checkout")
	u.SetGeneration(gen)
	u.Object["spec"] = map[string]any{"app": "checkout", "renderedHash": renderedHash, "workloads": []any{}}
	if st != nil {
		if _, err := SetStatus(u, *st); err != nil {
			panic(err)
		}
	}
	return u
}

// checkStatusFor is the status of the runtime checks' phase (the images
// verified) at generation 2.
func checkStatusFor(o Outcome, reason, msg string) *v1alpha1.AcceptanceStatus {
	s := NewStatus(&Report{Generation: 2, RenderedHash: renderedHash, Outcome: o, Reason: reason, Message: msg, CheckPhase: true},
		v1alpha1.AcceptanceStatus{}, time.Unix(1_800_000_000, 0))
	return &s
}

func statusFor(gen int64, o Outcome, reason, msg string) *v1alpha1.AcceptanceStatus {
	s := NewStatus(&Report{Generation: gen, RenderedHash: renderedHash, Outcome: o, Reason: reason, Message: msg}, v1alpha1.AcceptanceStatus{}, time.Unix(1_800_000_000, 0))
	return &s
}

// TestHealthScriptAndKstatus checks the Argo CD Lua health script and the
// kstatus reading (what Flux's health checks use) of the same statuses.
func TestHealthScriptAndKstatus(t *testing.T) {
	script := healthScript(t)
	stale := statusFor(1, Verified, v1alpha1.ReasonVerified, "ok")
	otherHash := statusFor(2, Verified, v1alpha1.ReasonVerified, "ok")
	otherHash.RenderedHash = "sha256:" + strings.Repeat("d", 64)
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		argo    string
		msg     string
		kstatus status.Status
	}{
		// As the API server serves it before the verifier wrote anything:
		// the CRD defaults status.observedGeneration to 0.
		{"no status yet", acceptanceWith(1, &v1alpha1.AcceptanceStatus{}), "Progressing", "Waiting for throughline", status.InProgressStatus},
		{"verified", acceptanceWith(2, statusFor(2, Verified, v1alpha1.ReasonVerified, "1 workloads, 2 Pods run the declared images")), "Healthy", "Verified: 1 workloads", status.CurrentStatus},
		{"verified an older generation", acceptanceWith(2, stale), "Progressing", "generation 2", status.InProgressStatus},
		{"verified another rendered hash", acceptanceWith(2, otherHash), "Progressing", "rendered hash", status.CurrentStatus},
		{"rollout in progress", acceptanceWith(2, statusFor(2, Pending, v1alpha1.ReasonRolloutInProgress, "1 of 2 replicas updated")), "Progressing", "RolloutInProgress: 1 of 2", status.InProgressStatus},
		{"workload not found", acceptanceWith(2, statusFor(2, Pending, v1alpha1.ReasonWorkloadNotFound, "not found: Deployment shop/web")), "Progressing", "WorkloadNotFound", status.InProgressStatus},
		{"unverifiable", acceptanceWith(2, statusFor(2, Unverifiable, v1alpha1.ReasonUnverifiable, "registry unreachable")), "Progressing", "Unverifiable: registry unreachable", status.InProgressStatus},
		{"mismatch", acceptanceWith(2, statusFor(2, Mismatch, v1alpha1.ReasonImageMismatch, "container web (Pod web-1): imageID r@sha256:9 is not")), "Degraded", "ImageMismatch: container web (Pod web-1)", status.FailedStatus},
		{"invalid", acceptanceWith(2, statusFor(2, Mismatch, v1alpha1.ReasonInvalid, "spec.workloads[0]: kind and name are required")), "Degraded", "Invalid: spec.workloads[0]", status.FailedStatus},
		{"soaking", acceptanceWith(2, checkStatusFor(Pending, v1alpha1.ReasonSoaking, "images verified; soak until")), "Progressing", "Soaking: images verified",
			status.InProgressStatus},
		{"a check unverifiable", acceptanceWith(2, checkStatusFor(Unverifiable, v1alpha1.ReasonUnverifiable, "check errors: querying Prometheus")),
			"Progressing", "Unverifiable: check errors", status.InProgressStatus},
		{"check failed", acceptanceWith(2, checkStatusFor(Mismatch, v1alpha1.ReasonCheckFailed, "check errors failed 3 times in a row: value 0.2")),
			"Degraded", "CheckFailed: check errors", status.FailedStatus},
		{"a check unmeasurable past its deadline", acceptanceWith(2, checkStatusFor(Mismatch, v1alpha1.ReasonCheckUnverifiable,
			"check errors could not be measured within the environment's reconcileDeadline 15m0s")),
			"Degraded", "CheckUnverifiable: check errors", status.FailedStatus},
		{"deadline exceeded", acceptanceWith(2, statusFor(2, Mismatch, v1alpha1.ReasonDeadlineExceeded, "not verified within the rollout deadline 10m0s")),
			"Degraded", "DeadlineExceeded: not verified", status.FailedStatus},
	}
	if got, _ := runHealth(t, script, acceptanceWith(1, nil).Object); got != "Progressing" {
		t.Fatalf("no status at all: %s, want Progressing", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := runHealth(t, script, tt.obj.Object)
			if got != tt.argo || !strings.Contains(msg, tt.msg) {
				t.Fatalf("Argo CD health = %s %q; want %s containing %q", got, msg, tt.argo, tt.msg)
			}
			res, err := status.Compute(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.kstatus {
				t.Fatalf("kstatus = %s (%s); want %s", res.Status, res.Message, tt.kstatus)
			}
		})
	}
}

func TestNewStatusKeepsTimes(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	rep := &Report{Generation: 3, RenderedHash: renderedHash, Outcome: Verified, Reason: v1alpha1.ReasonVerified, Message: "ok"}
	s1 := NewStatus(rep, v1alpha1.AcceptanceStatus{}, t0)
	s2 := NewStatus(rep, s1, t0.Add(time.Hour))
	if !s2.VerifiedAt.Equal(s1.VerifiedAt) || !s2.Conditions[0].LastTransitionTime.Equal(&s1.Conditions[0].LastTransitionTime) {
		t.Fatalf("times moved without a change: %v -> %v", s1.VerifiedAt, s2.VerifiedAt)
	}
	u := acceptanceWith(3, &s1)
	if changed, err := SetStatus(u, s2); err != nil || changed {
		t.Fatalf("SetStatus of an identical status: changed %v, %v", changed, err)
	}
	rep.Outcome, rep.Reason = Mismatch, v1alpha1.ReasonImageMismatch
	s3 := NewStatus(rep, s2, t0.Add(2*time.Hour))
	if s3.VerifiedAt != nil || s3.Conditions[0].LastTransitionTime.Equal(&s1.Conditions[0].LastTransitionTime) {
		t.Fatalf("mismatch kept verifiedAt or the transition time: %+v", s3)
	}
}
