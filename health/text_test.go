package health

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
)

func TestReportErrAndText(t *testing.T) {
	t.Parallel()
	const d = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	mk := func(o Outcome, reason string) *Report {
		return &Report{Namespace: "shop", Name: "web", Generation: 2, Outcome: o, Reason: reason, Message: "msg " + reason,
			Workloads: []WorkloadReport{{Kind: "Deployment", Namespace: "shop", Name: "web", Found: true, Outcome: o, Pods: 1, Revision: "h1",
				Containers: []ContainerReport{{Name: "app", Image: "r/app@" + d, Digest: d, Outcome: o,
					Observed: []v1alpha1.ObservedImage{{ImageID: "r/app@" + d, Outcome: o, Match: v1alpha1.MatchExact, Pods: 1, Pod: "web-1"}}}}}}}
	}
	for _, tt := range []struct {
		rep  *Report
		code int
	}{
		{mk(Verified, v1alpha1.ReasonVerified), exitcode.OK},
		{mk(Mismatch, v1alpha1.ReasonImageMismatch), exitcode.Refused},
		{mk(Mismatch, v1alpha1.ReasonInvalid), exitcode.Invalid},
		{mk(Pending, v1alpha1.ReasonRolloutInProgress), exitcode.Pending},
		{mk(Pending, v1alpha1.ReasonWorkloadNotFound), exitcode.Pending},
		{mk(Unverifiable, v1alpha1.ReasonUnverifiable), exitcode.Pending},
	} {
		if got := exitcode.Code(tt.rep.Err()); got != tt.code {
			t.Errorf("%s: exit %d, want %d", tt.rep.Reason, got, tt.code)
		}
		var out bytes.Buffer
		if err := tt.rep.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Acceptance shop/web", tt.rep.Reason, "Deployment shop/web", "r/app@" + d} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: report lacks %q:\n%s", tt.rep.Reason, want, out.String())
			}
		}
		b, err := json.Marshal(tt.rep)
		var back Report
		if err == nil {
			err = json.Unmarshal(b, &back)
		}
		if err != nil || back.Reason != tt.rep.Reason || back.Workloads[0].Containers[0].Observed[0].Match != v1alpha1.MatchExact {
			t.Errorf("JSON report does not read back: %v %+v", err, back)
		}
	}
}
