// Package install is the end-to-end test of a release: the image index that
// `make image` wrote to bin/image (OCI layout) and bin/image.ref is pushed to
// a real registry (Debian's docker-registry with htpasswd basic auth, the
// CLI reading the credentials from DOCKER_CONFIG), `throughline resolve`
// gives exactly that digest, the image's files and config are read back from
// the registry (the binary runs and prints its stamped version, user 999,
// plugin.yaml where Argo CD's cmp-server reads it), hack/release.sh pins a
// copy of deploy/ to the pushed reference, every bundle renders through the
// project's policy, and the rendered objects are applied server-side (dry
// run) to a real kube-apiserver, which accepts them.
//
// It needs bin/image: run `make image` first. Without it the test skips, or
// fails under CI=true. Build tag e2e:
//
//	make image
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/install/
package install
