// Package acceptance declares the artifact identity of a render: it runs the
// renderer and the policy, computes the rendered hash and builds the
// Acceptance object (throughline.dev/v1alpha1) that carries the app, the
// environment, the source revision, the rendered hash and every container's
// declared image and digest. The Argo CD plugin appends that object to its
// output; for Flux it is committed into the overlay. The verifier later
// writes the live evidence into its status.
package acceptance
