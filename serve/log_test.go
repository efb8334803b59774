package serve

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestServeLogsConflictsAtDebug (issue 34, item 5): controller-runtime
// reports a reconcile that lost an optimistic-concurrency race ("the
// object has been modified") through logr's Error; it is retried at once
// and is no error of serve's: logged at debug. Every other error stays at
// error.
func TestServeLogsConflictsAtDebug(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "throughline.dev", Resource: "acceptances"}, "checkout",
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	for _, c := range []struct {
		name  string
		err   error
		level string
	}{
		{"conflict", conflict, "debug"},
		{"wrapped conflict", fmt.Errorf("writing status of Acceptance shop/checkout: %w", conflict), "debug"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("no")), "error"},
		{"other", errors.New("registry down"), "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := logSink(zerolog.New(&buf).Level(zerolog.DebugLevel))
			s.Error(c.err, "Reconciler error", "controller", "acceptance")
			if !strings.Contains(buf.String(), `"level":"`+c.level+`"`) {
				t.Fatalf("logged %s, want level %s", buf.String(), c.level)
			}
		})
	}
	// At the default level (info) a conflict is not printed at all.
	var buf bytes.Buffer
	s := logSink(zerolog.New(&buf).Level(zerolog.InfoLevel))
	s.Error(conflict, "Reconciler error")
	s.WithName("controller").WithValues("acceptance", "shop/checkout").Error(conflict, "Reconciler error")
	if buf.Len() != 0 {
		t.Fatalf("printed at info: %s", buf.String())
	}
}
