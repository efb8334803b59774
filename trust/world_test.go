package trust

import (
	"context"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// policyOf compiles tp for env against w's files.
func policyOf(w *trusttest.World, env string, tp *v1alpha1.TrustPolicy) *Policy {
	w.T.Helper()
	p, err := Compile(context.Background(), env, tp, w.Read)
	if err != nil {
		w.T.Fatal(err)
	}
	return p
}
