// Package registry is the end-to-end test of throughline's registry
// knowledge against a real registry: Debian's docker-registry (CNCF
// distribution) started by internal/testenv on 127.0.0.1, with and without
// htpasswd basic auth. It resolves multi-arch indexes, moves a tag between
// two pushes and proves that `throughline drift check` refuses it. Build tag
// e2e:
//
//	go test -race -tags e2e -count=1 ./e2e/registry/
package registry
