package runtimecheck

import (
	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// Result is one evaluation of one check.
type Result struct {
	Verdict v1alpha1.CheckVerdict
	// Value is what was measured, as text ("0.012", "200 in 12ms", "Job
	// complete"); empty when nothing was measured.
	Value string
	// Message explains the verdict.
	Message string
	// Final: the verdict will not change for this generation (a Job that
	// finished); a final Failed halts at once, whatever the threshold.
	Final bool
}

func passed(value, msg string) Result {
	return Result{Verdict: v1alpha1.CheckPassed, Value: value, Message: msg}
}

func failed(value, msg string) Result {
	return Result{Verdict: v1alpha1.CheckFailed, Value: value, Message: msg}
}

func unverifiable(msg string) Result {
	return Result{Verdict: v1alpha1.CheckUnverifiable, Message: msg}
}

func pending(msg string) Result {
	return Result{Verdict: v1alpha1.CheckPending, Message: msg}
}
