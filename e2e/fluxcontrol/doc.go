// Package fluxcontrol runs examples/gitops-env through Flux's real
// source-controller and kustomize-controller: the staging overlay with its
// committed Acceptance, served by the harness's Git server, applied to a real
// kube-apiserver and held not-Ready by kstatus until throughline's verifier
// (the `serve` wiring) has verified the live images; staging's promotion
// record, RECONCILING, becomes ACCEPTED through the real
// notification-controller and the notifier, which commits the evidence for
// the Kustomization's own lastAppliedRevision to the Git server, once.
// TestFluxExperiments runs the seeds' experiments 1, 2, 3, 5 and 6 (staging
// and production, promotion, rollback, break-glass) through the same
// controllers (experiment_*_test.go). The real kube-controller-manager rolls
// the Deployment out; the test plays only the scheduler and the kubelet
// (internal/testenv.StartKubelet). TestFluxTenantAppliesAcceptance applies
// a tenant's Acceptance through Flux impersonation (spec.serviceAccountName,
// a ServiceAccount bound only to the built-in admin role, which
// deploy/crds/acceptance-roles.yaml extends through the real
// clusterrole-aggregation controller).
// Build tag e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/fluxcontrol/
//
// docs/harness.md lists what is real and what the tests play.
package fluxcontrol
