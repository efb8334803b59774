// Package health tests the Acceptance controller (health/) and
// `throughline verify` against the harness's real kube-apiserver and registry:
// the test plays kubelet and the workload controllers (ReplicaSets, Pods,
// imageIDs written through the status subresource) and asserts each
// Acceptance status transition. Build tag e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/health/
package health
