// Package breakglass is the end-to-end test of throughline breakglass
// against a real kube-apiserver (envtest, with Argo CD's Application and
// Flux's Kustomization CRDs) and a real Git smart-HTTP server: pause of an
// Argo CD Application and of a Flux Kustomization, the refusals (an
// ApplicationSet owner, a parent app), two operators pausing at once
// (exactly one wins), and resume refused until the write-back is merged.
// Build tag e2e:
//
//	go test -race -tags e2e -count=1 -exec hack/netns-exec.sh ./e2e/breakglass/
package breakglass
