// Package cli is the command-line layer the two binaries share: throughline
// (every command) and throughline-cmp (only the Argo CD plugin, linked lean
// so the sidecar starts in milliseconds). It holds what both print the same
// way: the exit code and message of an error (ExitCode), the logger of
// --log-level and --log-format (NewLogger), the version stamp (Version) and
// `cmp generate` itself (CMPGenerate), so the plugin behaves the same
// whichever binary runs it.
//
// It imports nothing a render does not need (no cobra, no Kubernetes client,
// no JSON Schema): cmd/throughline-cmp's tests guard its import list.
package cli
