// Package serve assembles throughline serve, the in-cluster process: the
// Acceptance controller (health.NewManager) with the runtime checks'
// Prometheus and the checks committed in Git, the Argo CD and Flux webhook
// receivers (package notifier) with their resync on the elected leader,
// the read-only web view of the chain (package chainview), the delivery
// metrics on /metrics (package delivery), the break-glass expiry monitor
// (breakglass/live) and controller-runtime's logging written to zerolog.
//
// Options holds serve's flags (AddFlags) and Run starts everything they
// turn on and runs until its context ends. The cluster and the registry
// client are passed in (Options.Cluster, Options.Registry): their flags
// belong to the command, which shares them with every other command that
// talks to a cluster or a registry. serve logs only to the logger Run is
// given; a flag in error is an exitcode.UsageError.
package serve
