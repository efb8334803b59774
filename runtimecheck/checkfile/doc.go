// Package checkfile reads the runtime checks an app declares for an
// environment: File (throughline-checks.yaml) in the app's overlay
// directory, apiVersion throughline.dev/v1alpha1, kind RuntimeChecks, its
// body the fields of v1alpha1.RuntimeChecks (soak and checks). The render
// reads it (acceptance.Declare) and carries it in the Acceptance, so what
// Argo CD or Flux applies, and the verifier of `throughline serve`
// evaluates, is what the repository declares at that revision.
//
// The file is untrusted input: it is read through the render's confined
// filesystem (never outside the repository root, symlinks included,
// size-capped), decoded strictly (an unknown field is refused) and judged
// field by field; every failure is invalid input (exit 4) naming the file
// and the field path (checks[1].prometheus.threshold), except a Job image
// not pinned by digest, which is the policy's unpinned-image refusal (exit
// 3) like any rendered image, and an HTTP check naming a namespace the
// app does not own (RuleCheckNamespace, exit 3). An HTTP probe names a
// Service port in the app's own namespace, or one the environment registry
// binds to the app, and a path, never a URL: there is no way to point a
// probe outside the cluster's Services or into another tenant's.
//
// PromQL is checked by the QueryParser of Options: the full binary passes
// package checkfile/promql (Prometheus's own parser, which reports the
// position); the lean plugin renderer (cmd/throughline-cmp-render), which must not
// link Prometheus, uses LexQuery, a syntax check of the query's tokens and
// brackets. The PR gate (`promote check`) and `throughline render` use the
// full parser, so a query Prometheus cannot parse is refused before merge.
//
// It does not evaluate checks (package runtimecheck of `serve` does) and
// does not read Git.
package checkfile
