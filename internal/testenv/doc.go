// Package testenv starts the real servers that throughline's end-to-end tests
// run against, each on 127.0.0.1 for the duration of one test:
//
//   - [StartAPIServer]: kube-apiserver + etcd through controller-runtime's
//     envtest (KUBEBUILDER_ASSETS), with CRDs installed.
//   - [StartControllerManager]: kube-controller-manager of the same version
//     against an [APIServer]: the deployment, replicaset, garbage-collector,
//     namespace and service-account controllers.
//   - [StartKubelet]: a PLAYED kubelet (and scheduler), the one part of
//     Kubernetes that cannot run here (no container runtime): it binds the
//     Pods of its namespaces to a Node and writes their status as running,
//     with an imageID per container.
//   - [StartRegistry]: Debian's docker-registry (CNCF distribution) with a
//     config written here (loopback, filesystem storage, delete enabled,
//     optional htpasswd basic auth).
//   - [StartGitServer]: git's own smart-HTTP server (git http-backend behind
//     net/http/cgi), optional basic auth, fast-forward-only repositories.
//   - [StartNotificationController]: Flux's notification-controller binary
//     against an [APIServer], with its CRDs installed.
//   - [StartArgoCDNotifications]: Argo CD's notifications controller (the
//     multi-call argocd binary run as argocd-notifications) against an
//     [APIServer], with the Application and AppProject CRDs installed.
//   - [StartArgoCDControlPlane]: Argo CD's application controller,
//     repo-server and cmp-server (the same binary) with Redis, against an
//     [APIServer] that is also the in-cluster destination.
//
// The binaries are built by the scripts in hack/ (hack/e2e-assets.sh builds
// them all and prints the environment to export). Every Start function stops
// its server in t.Cleanup, also when the test panics, keeps its files in
// t.TempDir, and prints the tail of the server's log when the test failed.
//
// Missing binaries: a test that needs a server whose binary is not built is
// skipped with the command that builds it, except when CI=true, where it fails:
// CI must never pass by skipping.
//
// This package is for tests only. It pulls in client-go and
// controller-runtime, and must never be imported by render/, policy/ or cmp/.
package testenv
