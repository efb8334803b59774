// Package runtimechecks tests the runtime checks of `throughline serve`
// (issue 20) against a real kube-apiserver, the real kube-controller-manager
// (Deployments to ReplicaSets to Pods), a played kubelet
// (internal/testenv.StartKubelet) and a real Prometheus (Debian's package,
// internal/testenv.StartPrometheus) scraping an exporter the test controls:
// a release whose error ratio rises during the soak halts (CheckFailed), one
// that stays green is Verified only after the soak, a stopped Prometheus is
// Unverifiable, a failing smoke-test Job halts. Build tag e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/runtimechecks/
package runtimechecks
