// Package rollback is the end-to-end test of throughline rollback against
// real servers. TestRollback (Git smart-HTTP server, CNCF distribution
// registry): the previous accepted digest is proposed on a new attempt
// branch, born VERIFIED by the environment's own earlier acceptance (main
// never moves, nothing is force-pushed); a digest never accepted in the
// environment, a rollback past an irreversible migration without the
// explicit flag and a digest deleted from the registry are refused.
// TestRollbackEvidenceChain adds a kube-apiserver, the Acceptance
// controller, Flux's notification-controller and the notifier: A then B are
// accepted through the notifier, the rollback to A is approved, passes the
// PR gate, is merged and reconciled, and the notifier's evidence for the
// rollback attempt shows the desired commit pinning A, observed, and Pods
// running A. Build tag e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/rollback/
package rollback
