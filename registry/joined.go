package registry

import (
	"errors"
	"fmt"
	"strings"
)

// JoinErrors joins the failures of resolving several images into one
// error that prints every failure and unwraps to the one whose exit code
// matters most: a hard failure over an invalid input (ErrNotFound,
// ErrInvalid) over an unreachable registry (ErrUnreachable). One error is
// returned as it is; none is nil.
func JoinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	worst := errs[0]
	for _, e := range errs[1:] {
		if severity(e) > severity(worst) {
			worst = e
		}
	}
	if len(errs) == 1 {
		return worst
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &joinedError{worst, fmt.Sprintf("%d images not resolved:\n  %s", len(errs), strings.Join(msgs, "\n  "))}
}

// severity ranks a resolution failure for JoinErrors.
func severity(err error) int {
	switch {
	case errors.Is(err, ErrUnreachable):
		return 1
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalid):
		return 2
	}
	return 3
}

// joinedError prints every failure and unwraps to the one that sets the exit code.
type joinedError struct {
	worst error
	msg   string
}

func (e *joinedError) Error() string { return e.msg }
func (e *joinedError) Unwrap() error { return e.worst }
