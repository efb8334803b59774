// Package cli is the command-line layer the binaries share: throughline
// (every command) and throughline-cmp-render (only the Argo CD plugin's
// in-process render, linked lean so the sidecar starts in milliseconds;
// throughline-cmp, the thin client plugin.yaml runs, links only
// internal/pluginclient, whose code this package uses for the same lines). It holds what both print the same
// way: the exit code and message of an error (ExitCode), the logger of
// --log-level and --log-format (NewLogger), the version stamp (Version) and
// `cmp generate` itself (CMPGenerate), so the plugin behaves the same
// whichever binary runs it.
//
// It imports nothing a render does not need (no cobra, no Kubernetes client,
// no JSON Schema): cmd/throughline-cmp-render's tests guard its import list.
package cli
