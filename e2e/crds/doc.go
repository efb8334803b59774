// Package crds applies the shipped CustomResourceDefinitions to a real
// kube-apiserver and checks that nothing the project writes is pruned: an
// Acceptance carrying every field of api/v1alpha1's Go types (found by
// reflection, so a new field is covered without editing the test) and the
// Acceptance of every example overlay are created, their status written
// through the status subresource, and read back equal. A field the CRD does
// not declare is silently dropped by the API server, which Argo CD sees as a
// difference forever (OutOfSync, and with self-heal a sync loop). Build tag
// e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/crds/
package crds
