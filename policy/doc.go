// Package policy holds throughline's refusals: every image must be pinned by
// a sha256 digest, an object identity may appear once per render, remote
// kustomize resources must name a full commit, Helm charts an exact version.
//
// Checks never stop at the first problem: they return every violation at
// once, each naming the file, the object, the field and the offending value,
// so a reviewer fixes them in one pass. Exceptions come only from the
// repository's allow-list file, and every exception used is returned so it is
// never silent. The package is pure: no network, no Kubernetes client.
package policy
