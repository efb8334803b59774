// Package remotelimit bounds what the process reads from a remote server.
//
// Every HTTP client that reads from a registry or a chart repository takes
// its transport from [New]: a response whose Content-Length exceeds the
// limit of its kind of request is refused before a byte of its body is
// read (the body is closed unread), and a body without an honest
// Content-Length (chunked) fails once more than the limit has been read.
// Both failures are a *[TooLargeError] (errors.Is(err, [ErrTooLarge])) that
// names the kind, the limit and the URL without credentials, query or
// fragment; nothing of the response is in it. A library that buffers
// responses itself (go-containerregistry reads up to 100 MiB of a manifest
// before the caller can look at it) never starts on an oversized one.
//
// The limit is chosen per client, with one [Policy] per use: [Fixed] for a
// client that reads one kind (a chart repository's index.yaml, a chart
// package), [Registry] for a go-containerregistry client, which decides by
// the OCI distribution path of the request: manifests and referrers are
// [Manifest] (4 MiB), blobs the given blob limit, everything else (the
// /v2/ ping, the bearer token endpoint named by the registry's
// WWW-Authenticate realm, whose path cannot be known in advance) [Token]
// (64 KiB). A redirected request keeps the kind of the request that was
// redirected (a blob served from storage elsewhere is still a blob).
//
// The limits of the project are the variables of this package ([Manifest],
// [Token], [ChartIndex], [Default]); docs/operations.md lists them.
// HEAD responses have no body and are not checked.
//
// The package imports the standard library only (the lean plugin links it).
// A test of the module (boundary_test.go) refuses non-test code that hands
// go-containerregistry, an http.Client or the http package's default client
// a transport that does not come from this package.
package remotelimit
