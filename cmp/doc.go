// Package cmp is throughline's Argo CD Config Management Plugin: the
// contract of plugin.yaml and of `throughline cmp generate`.
//
// Argo CD streams the repository to the sidecar and runs generate in the
// application's path with its build environment (ARGOCD_APP_*, KUBE_*) and
// the application's plugin env (ARGOCD_ENV_*) and parameters (PARAM_*). The
// repository root is the working directory minus ARGOCD_APP_SOURCE_PATH.
// Generate renders, applies policy and returns the objects plus one
// Acceptance as a YAML stream; on any refusal it returns an error and no
// output, so Argo CD shows a ComparisonError instead of pruning.
//
// Renders are cached on disk by the content of every file the render read
// (and every existence check and listing it made), the plugin env and
// throughline's version, so an app whose inputs did not change returns at
// once when a commit elsewhere in the repository makes Argo CD re-render it.
package cmp
