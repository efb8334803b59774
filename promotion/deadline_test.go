package promotion

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// TestPolicyReconcileDeadline: a reconcileDeadline that is zero or negative
// would halt every promotion at once (or never): bad input naming the file
// and the field. A positive one, or none, is read.
func TestPolicyReconcileDeadline(t *testing.T) {
	head := "apiVersion: throughline.dev/v1alpha1\nkind: PromotionPolicy\nenvironments:\n"
	for _, c := range []struct {
		name, env, field string
	}{
		{"zero", "  production: {reconcileDeadline: 0s}\n", "environments.production.reconcileDeadline"},
		{"negative", "  staging: {reconcileDeadline: 10m}\n  production: {reconcileDeadline: -5m}\n", "environments.production.reconcileDeadline"},
		{"positive", "  production: {reconcileDeadline: 10m}\n", ""},
		{"none", "  production: {cluster: prod}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePolicy(PolicyFile, []byte(head+c.env))
			if c.field == "" {
				if err != nil || p == nil {
					t.Fatalf("%v", err)
				}
				return
			}
			var re *RecordError
			if !errors.As(err, &re) || re.File != PolicyFile || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %v, want %s naming %s", err, PolicyFile, c.field)
			}
			// Read from Git, as every command reads it: exit 4.
			r := commitFiles(t, map[string]string{PolicyFile: head + c.env})
			_, err = ReadPolicy(context.Background(), r, "HEAD")
			if exitcode.Code(err) != exitcode.Invalid || !strings.Contains(err.Error(), PolicyFile) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("ReadPolicy: exit %d: %v", exitcode.Code(err), err)
			}
		})
	}
}
