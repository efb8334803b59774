// Package argocdcontrol runs throughline through Argo CD's real control
// plane: argocd-application-controller, argocd-repo-server with Redis and
// argocd-cmp-server serving the repository's plugin.yaml
// (internal/testenv.StartArgoCDControlPlane), a real kube-apiserver as the
// in-cluster destination, examples/gitops-env in a smart-HTTP Git server, and
// `throughline serve`'s Acceptance verifier (package health), the
// notifier's resync, CNCF distribution's registry, the throughline CLI
// (pin, drift, check, promote, rollback, breakglass: issue 16's experiments
// 1-6 in experiment_*_test.go) and the real kube-controller-manager
// (Deployments to ReplicaSets to Pods). The test plays the scheduler and the
// kubelet (internal/testenv.StartKubelet: Pod binding, status and imageID;
// no container runtime here) and the ingress controller (Ingress status).
// Build tag e2e; the
// application controller binds 0.0.0.0, so run it in the private network
// namespace:
//
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/argocdcontrol/
package argocdcontrol
