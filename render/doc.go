// Package render turns an application directory of a GitOps repository into
// the set of Kubernetes objects it declares, and computes the canonical
// rendered hash of that set.
//
// An application is either a kustomization (rendered in-process with krusty,
// plugins and Helm off, load restrictions root-only) or a directory of plain
// YAML/JSON manifests. Every file access goes through a filesystem confined to
// the repository root: paths and symlinks that resolve outside it are refused,
// files above a size cap are refused, and nothing is ever written. Remote
// kustomize resources are never fetched.
//
// The rendered hash is sha256 over the objects sorted by (group, kind,
// namespace, name), each serialized with RFC 8785 (JSON Canonicalization
// Scheme) followed by "\n". The package imports no Kubernetes client and does
// no network I/O, so the Argo CD plugin path starts fast.
package render
