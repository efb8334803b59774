package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/health"
)

func TestVerifyUsage(t *testing.T) {
	for _, args := range [][]string{
		{"verify"},
		{"verify", "--namespace", "shop"},
		{"verify", "-n", "shop", "--acceptance", "web", "-o", "yaml"},
		{"verify", "-n", "shop", "--acceptance", "web", "extra"},
		{"serve", "--workers", "0"},
	} {
		if r := runCLI(t, args...); r.code != exitcode.Usage {
			t.Errorf("%v: exit %d, want %d (stderr %s)", args, r.code, exitcode.Usage, r.stderr)
		}
	}
}

func TestVerifyNoCluster(t *testing.T) {
	// A kubeconfig that points nowhere: an I/O failure, not a verdict.
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	verifyMust(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	r := runCLI(t, "verify", "--kubeconfig", kc, "-n", "shop", "--acceptance", "web", "--no-registry-cache")
	if r.code != exitcode.Internal || !strings.Contains(r.stderr, "shop/web") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}

func verifyMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestVerifyExitAndReport(t *testing.T) {
	const d = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	mk := func(o health.Outcome, reason string) *health.Report {
		return &health.Report{Namespace: "shop", Name: "web", Generation: 2, Outcome: o, Reason: reason, Message: "msg " + reason,
			Workloads: []health.WorkloadReport{{Kind: "Deployment", Namespace: "shop", Name: "web", Found: true, Outcome: o, Pods: 1, Revision: "h1",
				Containers: []health.ContainerReport{{Name: "app", Image: "r/app@" + d, Digest: d, Outcome: o,
					Observed: []v1alpha1.ObservedImage{{ImageID: "r/app@" + d, Outcome: o, Match: v1alpha1.MatchExact, Pods: 1, Pod: "web-1"}}}}}}}
	}
	for _, tt := range []struct {
		rep  *health.Report
		code int
	}{
		{mk(health.Verified, v1alpha1.ReasonVerified), exitcode.OK},
		{mk(health.Mismatch, v1alpha1.ReasonImageMismatch), exitcode.Refused},
		{mk(health.Mismatch, v1alpha1.ReasonInvalid), exitcode.Invalid},
		{mk(health.Pending, v1alpha1.ReasonRolloutInProgress), exitcode.Pending},
		{mk(health.Pending, v1alpha1.ReasonWorkloadNotFound), exitcode.Pending},
		{mk(health.Unverifiable, v1alpha1.ReasonUnverifiable), exitcode.Pending},
	} {
		var stderr bytes.Buffer
		if got := exitCode(verifyExit(tt.rep), &stderr); got != tt.code {
			t.Errorf("%s: exit %d, want %d", tt.rep.Reason, got, tt.code)
		}
		var out bytes.Buffer
		verifyMust(t, printVerifyReport(&out, tt.rep, "text"))
		for _, want := range []string{"Acceptance shop/web", tt.rep.Reason, "Deployment shop/web", "r/app@" + d} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: report lacks %q:\n%s", tt.rep.Reason, want, out.String())
			}
		}
		out.Reset()
		verifyMust(t, printVerifyReport(&out, tt.rep, "json"))
		var back health.Report
		if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.Reason != tt.rep.Reason || back.Workloads[0].Containers[0].Observed[0].Match != v1alpha1.MatchExact {
			t.Errorf("JSON report does not read back: %v %+v", err, back)
		}
	}
}
