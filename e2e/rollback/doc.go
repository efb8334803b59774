// Package rollback is the end-to-end test of throughline rollback against a
// real Git smart-HTTP server and a real OCI registry (CNCF distribution):
// the previous accepted digest is proposed on a new attempt branch (main
// never moves, nothing is force-pushed), a digest never accepted in the
// environment and a digest deleted from the registry are refused. Build tag
// e2e:
//
//	go test -race -tags e2e -count=1 -exec hack/netns-exec.sh ./e2e/rollback/
package rollback
