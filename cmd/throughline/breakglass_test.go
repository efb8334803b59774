package main

import (
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/gittest"
)

func breakglassRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	top := t.TempDir()
	files["README"] = "x\n"
	writeTree(t, top, files)
	gittest.Run(t, top, "init", "-q", "-b", "main")
	gittest.Run(t, top, "add", ".")
	gittest.Run(t, top, "commit", "-q", "-m", "seed")
	return top
}

// The refusals that come before the cluster is asked (a kubeconfig that
// points nowhere proves it is not).
func TestBreakglassRefusalsWithoutCluster(t *testing.T) {
	top := breakglassRepo(t, map[string]string{})
	kc := "--kubeconfig=" + t.TempDir() + "/none"
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"writeback without pause": {[]string{"breakglass", "writeback", "--repo", top, "--app", "web", "--env", "prod", "--operator", "a", kc}, exitcode.Refused, "no active pause record"},
		"resume without pause":    {[]string{"breakglass", "resume", "--repo", top, "--app", "web", "--env", "prod", "--operator", "a", kc}, exitcode.Refused, "is not paused"},
		"pause without ticket":    {[]string{"breakglass", "pause", "--repo", top, "--app", "web", "--env", "prod", "--operator", "a", "--expires", "1h", kc}, exitcode.Usage, "--ticket"},
		"force without reason":    {[]string{"breakglass", "resume", "--repo", top, "--app", "web", "--env", "prod", "--operator", "a", "--force", kc}, exitcode.Usage, "--reason"},
		"bad controller":          {[]string{"breakglass", "pause", "--repo", top, "--app", "web", "--env", "prod", "--operator", "a", "--controller", "spinnaker", "--ticket", "T", "--expires", "1h", kc}, exitcode.Usage, "argocd or flux"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d %s", r.code, r.stderr)
			}
		})
	}
}

// An active pause: a second pause and a resume with an unmerged write-back
// are refused before the cluster is asked.
func TestBreakglassActivePauseRefusals(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	rec := &breakglass.Record{SchemaVersion: breakglass.SchemaVersion, App: "web", Environment: "prod", Controller: breakglass.ArgoCD, State: breakglass.Paused,
		Object:   breakglass.Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "web-prod", ResourceVersion: "1"},
		Operator: "alice", Ticket: "INC-7", PausedAt: now, ExpiresAt: now.Add(time.Hour),
		Writeback: &breakglass.Writeback{Branch: "throughline/breakglass/web/prod/inc-7", Commit: strings.Repeat("0", 39) + "1"}}
	data, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	top := breakglassRepo(t, map[string]string{breakglass.Path("prod", "web"): string(data)})
	kc := "--kubeconfig=" + t.TempDir() + "/none"
	r := runCLI(t, "breakglass", "pause", "--repo", top, "--app", "web", "--env", "prod", "--operator", "bob", "--ticket", "INC-8", "--expires", "1h", kc)
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, "already paused by alice") {
		t.Fatalf("second pause: %d %s", r.code, r.stderr)
	}
	r = runCLI(t, "breakglass", "resume", "--repo", top, "--app", "web", "--env", "prod", "--operator", "alice", kc)
	if r.code != exitcode.Refused || !strings.Contains(r.stderr, "not merged") {
		t.Fatalf("resume unmerged: %d %s", r.code, r.stderr)
	}
}
