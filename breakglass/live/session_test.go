package live

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

// sessionRepo is a Git repository (a real one, git on PATH) whose main
// branch holds rec as the pause record of web in prod (none when nil).
func sessionRepo(t *testing.T, rec *breakglass.Record) *gitops.Repo {
	t.Helper()
	top := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", args...)
		cmd.Dir = top
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	files := map[string][]byte{"README": []byte("x\n")}
	if rec != nil {
		data, err := rec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		files[breakglass.Path("prod", "web")] = data
	}
	for name, data := range files {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "seed")
	r, err := gitops.OpenLocal(t.Context(), top)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSessionRefusesBeforeTheCluster: every refusal Git decides comes
// before the session asks for the cluster. The caller here hands a Connect
// that fails the test: an operation that reached the cluster while it
// should have been refused would pause, restore or read it.
func TestSessionRefusesBeforeTheCluster(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	active := &breakglass.Record{SchemaVersion: breakglass.SchemaVersion, App: "web", Environment: "prod", Controller: breakglass.ArgoCD,
		State:    breakglass.Paused,
		Object:   breakglass.Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "web-prod", ResourceVersion: "1"},
		Operator: "alice", Ticket: "INC-7", PausedAt: now, ExpiresAt: now.Add(time.Hour),
		Writeback: &breakglass.Writeback{Branch: "throughline/breakglass/web/prod/inc-7", Commit: strings.Repeat("0", 39) + "1"}}
	target := breakglass.Target{Controller: breakglass.ArgoCD, Namespace: "argocd", Name: "web-prod"}
	for _, tc := range []struct {
		name string
		rec  *breakglass.Record
		op   func(*Session, Connect) error
		code int
		want string
	}{
		{"second pause", active, func(s *Session, noCluster Connect) error {
			_, _, err := s.Pause(t.Context(), noCluster, "INC-8", now, now.Add(time.Hour))
			return err
		}, exitcode.Refused, "already paused by alice"},
		{"resume with the write-back unmerged", active, func(s *Session, noCluster Connect) error {
			_, err := s.Resume(t.Context(), noCluster, ResumeRequest{})
			return err
		}, exitcode.Refused, "not merged"},
		{"forced resume without a reason", active, func(s *Session, noCluster Connect) error {
			_, err := s.Resume(t.Context(), noCluster, ResumeRequest{Force: true})
			return err
		}, exitcode.Usage, "reason"},
		{"resume without a pause", nil, func(s *Session, noCluster Connect) error {
			_, err := s.Resume(t.Context(), noCluster, ResumeRequest{Force: true, Reason: "x"})
			return err
		}, exitcode.Refused, "nothing to resume"},
		{"write-back without a pause", nil, func(s *Session, noCluster Connect) error {
			_, err := s.Writeback(t.Context(), noCluster, breakglass.WritebackOptions{}, nil)
			return err
		}, exitcode.Refused, "nothing to write back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(t.Context(), sessionRepo(t, tc.rec), "web", "prod", target, "bob")
			if err != nil {
				t.Fatal(err)
			}
			err = tc.op(s, func() (client.Client, error) {
				t.Error("the cluster was asked for before the refusal")
				return nil, os.ErrInvalid
			})
			if exitcode.Code(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want exit %d saying %q, got exit %d: %v", tc.code, tc.want, exitcode.Code(err), err)
			}
		})
	}
}
