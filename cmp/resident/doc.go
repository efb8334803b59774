// Package resident is the resident renderer of the Argo CD sidecar: one
// long-lived process (Server) that holds the render cache in memory and
// renders through the confined render child, and the thin client
// (Client) that `cmp generate` uses to hand it the Application's
// environment and the unpacked directory.
//
// The two speak a bounded protocol over a unix socket in a private
// directory (0700, owned by the current user): every message is a 4-byte
// big-endian length and a body, and each side refuses a length above its
// cap before it reads a byte of the body and reads the body in steps, so a
// hostile or confused peer can make neither side allocate more than the
// cap, nor more than it actually sent. A request is one JSON frame; a
// response is a JSON header frame and one raw frame holding the manifests.
//
// The package renders nothing itself: the Server calls a Handler (the
// command wires cmp.Generate to it) and the Client returns a transport
// failure as an *UnavailableError so that the caller renders in-process.
// It does not log and links neither Prometheus nor any Kubernetes client:
// the Client is on the plugin's path (cmd/throughline-cmp guards it).
package resident
