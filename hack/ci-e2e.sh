#!/usr/bin/env bash
# CI entry point of the e2e suite (called from .ci/run): installs the system
# packages the harness needs, builds every server (hack/e2e-assets.sh, cached
# under $THROUGHLINE_CACHE), and runs ./e2e/... with CI=true, where a missing
# server fails instead of skipping. Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CI=true

# git (smart-HTTP server), iproute2 + util-linux (private network namespace),
# gcc (the race detector needs cgo), redis-server (Argo CD's repo-server and
# application controller cache, e2e/argocdcontrol), chromium + a font (the headless
# browser of e2e/webview), prometheus (e2e/runtimechecks), nodejs + npm (the Argo CD
# extension e2e/webview loads). docker-registry comes with hack/registry.sh.
missing=()
command -v git >/dev/null || missing+=(git)
command -v ip >/dev/null || missing+=(iproute2)
command -v unshare >/dev/null || missing+=(util-linux)
command -v flock >/dev/null || missing+=(util-linux)
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v chromium >/dev/null || missing+=(chromium fonts-liberation)
command -v prometheus >/dev/null || missing+=(prometheus)
command -v npm >/dev/null || missing+=(nodejs npm) # make argocd-extension (e2e/webview's TestArgoCDExtension)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci-e2e.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

t0=$(date +%s)
eval "$(hack/e2e-assets.sh)"
echo "ci-e2e.sh: assets ready in $(( $(date +%s) - t0 ))s" >&2

# The Argo CD extension's bundle, built before the tests (they run in a
# network namespace; npm ci needs the registry).
make argocd-extension

t0=$(date +%s)
go test -race -tags e2e -count=1 -timeout 20m -exec "$PWD/hack/netns-exec.sh" ${E2E_TESTFLAGS:-} ./e2e/...
echo "ci-e2e.sh: e2e suite passed in $(( $(date +%s) - t0 ))s" >&2
