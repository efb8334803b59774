#!/usr/bin/env bash
# Argo CD CMP compatibility tests: Argo CD's own CMP server (v2.14, v3.2 and
# v3.5, the newest release line the module proxy serves) runs the
# repository's plugin.yaml and is called over its unix socket as
# argocd-repo-server calls it. Each Argo CD release is a nested module (its
# Kubernetes pins must not reach the main module); harness/ is the shared
# test body. Extra arguments go to `go test` (e.g. -v, -run, -short).
# ARGOCD_VERSIONS="v2" limits the run to some releases.
# THROUGHLINE_E2E_PLUGIN_WRAPPER="/usr/bin/time -v" wraps the plugin command
# (a measurement run: the alias-bomb cases log the plugin's peak RSS).
set -euo pipefail
cd "$(dirname "$0")"

# v2/cmp_test.go and v3/cmp_test.go must differ only in import paths.
diff -u --label v2/cmp_test.go-as-v3 --label v3/cmp_test.go \
	<(sed -e 's#argo-cd/v2#argo-cd/v3#g' -e 's#go-grpc-middleware/retry#go-grpc-middleware/v2/interceptors/retry#' v2/cmp_test.go) \
	v3/cmp_test.go
# v35 (Argo CD v3.5) calls the same API as v3 (v3.2): the files are equal.
diff -u v3/cmp_test.go v35/cmp_test.go

(cd harness && go vet ./...)
status=0
for m in ${ARGOCD_VERSIONS:-v2 v3 v35}; do
	echo "== e2e/argocd/$m"
	if ! (cd "$m" && go vet ./... && go test -count=1 "$@" ./...); then
		echo "FAIL: e2e/argocd/$m" >&2
		status=1
	fi
done
exit "$status"
