// Package registry is throughline's knowledge of OCI registries: it resolves
// an image reference to a digest (HEAD, falling back to GET), lists the
// children of a multi-arch index with their platform, maps a child manifest
// to its config digest, and checks that a digest still exists.
//
// It is built on github.com/google/go-containerregistry. A [Client] reads
// credentials from the Docker config ($DOCKER_CONFIG) through
// authn.DefaultKeychain, speaks plain HTTP only to loopback registries or when
// [Options.Insecure] asks for it, bounds every operation with a timeout,
// retries 429 and 5xx answers with a bounded exponential backoff that honours
// the context, and never has more than [Options.Concurrency] requests in
// flight.
//
// Manifests are content-addressed, so they are cached on disk by digest
// forever ([Options.CacheDir], written atomically). A tag is a pointer that
// can move at any time: tag lookups are never cached beyond one [Client].
//
// Errors name the reference and wrap one of [ErrNotFound], [ErrUnauthorized],
// [ErrUnreachable] or [ErrInvalid] (test with errors.Is) so that callers can
// branch: the verifier maps ErrUnreachable to "unverifiable", never to
// "verified".
//
// Drift records ([Record], [ReadRecords], [CheckDrift]) store one resolution
// of a tag so that a later check can prove that the tag did not move.
//
// The package does not log.
package registry
