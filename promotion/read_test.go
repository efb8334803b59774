package promotion

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
)

// commitFiles makes a Git repository in a temporary directory whose one
// commit holds files, and opens it.
func commitFiles(t *testing.T, files map[string]string) *gitops.Repo {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	for p, s := range files {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		must(t, os.MkdirAll(filepath.Dir(abs), 0o755))
		must(t, os.WriteFile(abs, []byte(s), 0o644))
	}
	run("add", ".")
	run("commit", "-q", "--allow-empty", "-m", "files")
	r, err := gitops.OpenLocal(context.Background(), dir)
	must(t, err)
	return r
}

func TestReadRecord(t *testing.T) {
	ctx := context.Background()
	data, err := accepted(t).Marshal()
	must(t, err)
	good := string(data)
	for _, tc := range []struct {
		name, file, body, app, env string
		code                       int
		want                       string // in the error
	}{
		{"found", "promotion/checkout/production.yaml", good, "checkout", "production", exitcode.OK, ""},
		{"absent", "promotion/checkout/staging.yaml", good, "checkout", "production", exitcode.OK, ""},
		{"another environment's path", "promotion/checkout/staging.yaml", good, "checkout", "staging", exitcode.Invalid, `names app "checkout" environment "production"`},
		{"another app's path", "promotion/payments/production.yaml", good, "payments", "production", exitcode.Invalid, "lives at the path of payments/production"},
		{"does not parse", "promotion/checkout/production.yaml", "schemaVersion: [\n", "checkout", "production", exitcode.Invalid, "promotion record promotion/checkout/production.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := commitFiles(t, map[string]string{tc.file: tc.body})
			rec, err := ReadRecord(ctx, r, "main", tc.app, tc.env)
			if exitcode.Code(err) != tc.code || (tc.want != "" && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("%v (exit %d), want exit %d saying %q", err, exitcode.Code(err), tc.code, tc.want)
			}
			switch {
			case tc.name == "found" && (rec == nil || rec.App != "checkout" || rec.State != Accepted):
				t.Fatalf("record %+v", rec)
			case tc.name != "found" && rec != nil:
				t.Fatalf("record %+v, want none", rec)
			}
			var re *RecordError
			if tc.name == "does not parse" && !errors.As(err, &re) {
				t.Fatalf("%v: not a *RecordError", err)
			}
		})
	}
}

func TestReadPolicy(t *testing.T) {
	ctx := context.Background()
	p, err := ReadPolicy(ctx, commitFiles(t, nil), "main")
	if err != nil || p != nil || p.Cluster("production") != "production" {
		t.Fatalf("absent: %+v %v", p, err)
	}
	p, err = ReadPolicy(ctx, commitFiles(t, map[string]string{PolicyFile: "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\n" +
		"environments: {production: {cluster: prod-eu-1}}\n"}), "main")
	if err != nil || p.Cluster("production") != "prod-eu-1" {
		t.Fatalf("present: %+v %v", p, err)
	}
	_, err = ReadPolicy(ctx, commitFiles(t, map[string]string{PolicyFile: "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nbogus: 1\n"}), "main")
	if exitcode.Code(err) != exitcode.Invalid || !strings.Contains(err.Error(), PolicyFile) {
		t.Fatalf("unknown field: %v", err)
	}
}
