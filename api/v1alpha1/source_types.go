package v1alpha1

// SourcePolicy is what an environment's controllers read: the GitOps
// repository itself (the default, no source), or an OCI artifact that CI
// pushes from it (Flux OCIRepository, Argo CD oci:// sources). The
// revisions of an OCI environment's records and evidence are manifest
// digests (sha256:<hex>); a Git environment's are commit ids.
type SourcePolicy struct {
	// OCI, when set, makes the environment's source an OCI artifact.
	OCI *OCISourcePolicy `json:"oci,omitempty"`
}

// OCISourcePolicy names the OCI repository the environment's controllers
// pull and the tag CI pushes each merged commit's content to. The artifact
// names the Git commit it was built from in its manifest annotation
// org.opencontainers.image.revision (flux push artifact --revision):
// promote reconcile records the digest the tag resolves to only when that
// annotation names the merged commit.
type OCISourcePolicy struct {
	// Repository is the artifact's repository, without scheme, tag or
	// digest (registry.example.com/gitops/checkout-staging).
	Repository string `json:"repository"`
	// Tag is the tag the controllers follow (the OCIRepository's
	// spec.ref.tag, the Application's targetRevision).
	Tag string `json:"tag"`
}
