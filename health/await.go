package health

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/exitcode"
)

// Decided reports whether the verdict of rep is final: Verified or Mismatch.
// Pending and Unverifiable may change when asked again.
func (rep *Report) Decided() bool {
	return rep.Outcome == Verified || rep.Outcome == Mismatch
}

// VerifyNamed reads the Acceptance key through v.Client and verifies it
// once. An Acceptance that does not exist is an *exitcode.InvalidInput
// (exit 4); a failure to read it is an error (try again).
func (v *Verifier) VerifyNamed(ctx context.Context, key client.ObjectKey) (*Report, error) {
	acc := NewAcceptance()
	if err := v.Client.Get(ctx, key, acc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &exitcode.InvalidInput{Err: fmt.Errorf("Acceptance %s does not exist: %w", key, err)}
		}
		return nil, fmt.Errorf("reading Acceptance %s: %w", key, err)
	}
	return v.Verify(ctx, acc)
}

// Await verifies the Acceptance key (VerifyNamed) until its verdict is
// decided or until wait has passed, asking again every interval; wait <= 0
// asks once. onReport, when set, sees every report. The last report is
// returned, decided or not; a ctx that ends while waiting is not decided
// (*exitcode.PendingError).
func (v *Verifier) Await(ctx context.Context, key client.ObjectKey, wait, interval time.Duration, onReport func(*Report)) (*Report, error) {
	deadline := time.Now().Add(wait)
	for {
		rep, err := v.VerifyNamed(ctx, key)
		if err != nil {
			return nil, err
		}
		if onReport != nil {
			onReport(rep)
		}
		if rep.Decided() || wait <= 0 || time.Now().Add(interval).After(deadline) {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return nil, exitcode.NotDecided(fmt.Errorf("Acceptance %s: %w", key, ctx.Err()))
		case <-time.After(interval):
		}
	}
}
