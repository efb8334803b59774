// Package admission proves deploy/flux/admission-policy.yaml on a
// real kube-apiserver: in a namespace labelled throughline.dev/enforce=true a
// Pod with an unpinned image is refused and a pinned one admitted; and
// deploy/admission's Kyverno ImageValidatingPolicy and policy-controller
// ClusterImagePolicy fit those controllers' own CRD schemas (strict field
// validation; THROUGHLINE_ADMISSION_CRDS, hack/admission-crds.sh). Build tag
// e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/admission/
package admission
