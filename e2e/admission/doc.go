// Package admission proves deploy/flux/admission-policy.yaml on a
// real kube-apiserver: in a namespace labelled throughline.dev/enforce=true a
// Pod with an unpinned image is refused and a pinned one admitted. Build tag
// e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/admission/
package admission
