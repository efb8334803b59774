// Package committed answers, for the verifier of `throughline serve`,
// whether a live Acceptance's runtime checks are the ones the GitOps
// repository commits: before a check runs, [Source.Judge] reads the checks
// file of the Acceptance's overlay (spec.sourcePath) and the environment
// registry from Git at the branch's tip, judges the file as the render
// does (the app, its environment and the namespace rule come from the
// registry, never from the Acceptance's own fields), and compares it with
// spec.checks. Checks that differ (an Acceptance created or edited by
// whoever holds the `edit` role) are not run; checks that agree may probe
// only the namespaces the committed file names, each one the registry
// binds to the app.
//
// It holds by construction: the only namespaces a probe may reach besides
// the Acceptance's own come from Git, through the same checkfile rule the
// render applies. It does not run checks (package runtimecheck does) and
// does not write.
package committed
