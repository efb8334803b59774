package promotion

import (
	"context"
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/golden"
)

// commitFiles makes a Git repository in a temporary directory whose one
// commit holds files, and opens it.
func commitFiles(t *testing.T, files map[string]string) *gitops.Repo {
	t.Helper()
	dir, _ := gittest.New(t, files)
	r, err := gitops.OpenLocal(context.Background(), dir)
	must(t, err)
	return r
}

func TestReadRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, err := accepted(t).Marshal()
	must(t, err)
	good := string(data)
	record := golden.ErrorLines(t, "testdata/readrecord-errors.golden", 3)
	for _, tc := range []struct {
		name, file, body, app, env string
		code                       int
	}{
		{"found", "promotion/checkout/production.yaml", good, "checkout", "production", exitcode.OK},
		{"absent", "promotion/checkout/staging.yaml", good, "checkout", "production", exitcode.OK},
		{"another environment's path", "promotion/checkout/staging.yaml", good, "checkout", "staging", exitcode.Invalid},
		{"another app's path", "promotion/payments/production.yaml", good, "payments", "production", exitcode.Invalid},
		{"does not parse", "promotion/checkout/production.yaml", "schemaVersion: [\n", "checkout", "production", exitcode.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := commitFiles(t, map[string]string{tc.file: tc.body})
			rec, err := ReadRecord(ctx, r, "main", tc.app, tc.env)
			if exitcode.Code(err) != tc.code {
				t.Fatalf("%v (exit %d), want exit %d", err, exitcode.Code(err), tc.code)
			}
			if tc.code != exitcode.OK {
				// The error names the file of the path read: the mismatch
				// (its app and environment in the golden file), or the parse.
				var ii *exitcode.InvalidInput
				var re *RecordError
				named := errors.As(err, &ii) && ii.File == tc.file || errors.As(err, &re) && re.File == tc.file
				if !named {
					t.Fatalf("%v: does not name %s", err, tc.file)
				}
				record(tc.name, err)
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
	t.Parallel()
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
	var re *RecordError
	if exitcode.Code(err) != exitcode.Invalid || !errors.As(err, &re) || re.File != PolicyFile {
		t.Fatalf("unknown field: %v", err)
	}
}
