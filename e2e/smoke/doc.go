// Package smoke proves that every real server of internal/testenv starts and
// behaves like the real thing: each test drives one server through the
// protocol a later feature depends on. Build tag e2e:
//
//	eval "$(hack/e2e-assets.sh)"
//	go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/...
//
// or simply make e2e. A test whose server binary is missing is skipped with
// the command that builds it, and fails when CI=true.
package smoke
