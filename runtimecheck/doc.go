// Package runtimecheck evaluates the runtime checks an Acceptance declares
// (spec.checks, issue 20) once its running images are verified: a PromQL
// instant query compared with a threshold ([Prometheus]), an HTTP GET
// against the ready endpoints of an in-cluster Service ([Prober]), a smoke
// test run as a Kubernetes Job ([Jobs]). Each evaluation is a [Result]
// with a verdict: Passed, Failed, Pending (a Job still running) or
// Unverifiable (the measurement could not be made: Prometheus unreachable
// or not configured, an answer that is not exactly one number). An
// Unverifiable check is never Passed.
//
// The soak logic is pure: [Due] says whether a check is due, [Record]
// folds a result into its status (consecutive failures), [Decide] turns
// the statuses and the soak start into the Ready verdict (Soaking,
// Verified, CheckFailed, Unverifiable) and [NextDue] into the requeue
// delay. The state lives in the Acceptance's status, so a restarted
// verifier resumes where it stopped.
package runtimecheck
