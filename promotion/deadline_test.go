package promotion

import (
	"context"
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
)

// TestPolicyReconcileDeadline: a reconcileDeadline that is zero or negative
// would halt every promotion at once (or never): bad input naming the file
// (a *RecordError's) and the field (its message, in the golden file). A
// positive one, or none, is read.
func TestPolicyReconcileDeadline(t *testing.T) {
	t.Parallel()
	head := "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n"
	record := golden.ErrorLines(t, "testdata/reconcile-deadline.golden", 4)
	for _, c := range []struct {
		name, env string
		bad       bool
	}{
		{"zero", "  production: {reconcileDeadline: 0s}\n", true},
		{"negative", "  staging: {reconcileDeadline: 10m}\n  production: {reconcileDeadline: -5m}\n", true},
		{"positive", "  production: {reconcileDeadline: 10m}\n", false},
		{"none", "  production: {cluster: prod}\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePolicy(PolicyFile, []byte(head+c.env))
			if !c.bad {
				if err != nil || p == nil {
					t.Fatalf("%v", err)
				}
				return
			}
			var re *RecordError
			if !errors.As(err, &re) || re.File != PolicyFile {
				t.Fatalf("error %v, want a *RecordError of %s", err, PolicyFile)
			}
			record(c.name+" parsed", err)
			// Read from Git, as every command reads it: exit 4.
			r := commitFiles(t, map[string]string{PolicyFile: head + c.env})
			_, err = ReadPolicy(context.Background(), r, "HEAD")
			if exitcode.Code(err) != exitcode.Invalid || !errors.As(err, &re) || re.File != PolicyFile {
				t.Fatalf("ReadPolicy: exit %d: %v", exitcode.Code(err), err)
			}
			record(c.name+" read", err)
		})
	}
}
