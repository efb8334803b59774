module github.com/throughline-dev/throughline/e2e/argocd/harness

go 1.26.8

require (
	github.com/gowebpki/jcs v1.0.2
	sigs.k8s.io/yaml v1.4.0
)
