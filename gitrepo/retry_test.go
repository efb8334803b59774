package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestRetryClosedInput: go-git v5's SSH transport sometimes fails a fetch
// with "closing input: EOF" (the server closed the channel first; CI saw it
// once in TestCloneOverSSH). Such a fetch is tried again, at most three
// times in all; any other error, and a cancelled context, end it at once.
func TestRetryClosedInput(t *testing.T) {
	t.Parallel()
	closed := fmt.Errorf("closing input: %s", "EOF") // as go-git words it (%s, not %w)
	other := errors.New("authentication required")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		errs    []error // what each call returns
		calls   int
		wantErr error
	}{
		{"fetched at once", context.Background(), []error{nil}, 1, nil},
		{"closed input once, then fetched", context.Background(), []error{closed, nil}, 2, nil},
		{"closed input every time", context.Background(), []error{closed, closed, closed, nil}, 3, closed},
		{"another error", context.Background(), []error{other, nil}, 1, other},
		{"closed input, then another error", context.Background(), []error{closed, other, nil}, 2, other},
		{"cancelled", cancelled, []error{closed, nil}, 1, closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := retryClosedInput(tc.ctx, func() error {
				calls++
				return tc.errs[calls-1]
			})
			if calls != tc.calls || !errors.Is(err, tc.wantErr) {
				t.Fatalf("%d calls, error %v; want %d calls, error %v", calls, err, tc.calls, tc.wantErr)
			}
		})
	}
}
