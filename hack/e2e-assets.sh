#!/usr/bin/env bash
# Builds (or finds in the cache) every server the e2e tests run, one after the
# other (2 cores: parallel builds only thrash), and prints the environment for
# the tests on stdout:
#
#   eval "$(hack/e2e-assets.sh)"
#   go test -race -tags e2e -count=1 -exec "$PWD/hack/netns-exec.sh" ./e2e/...
#
# Cold: about 20 min on 2 cores with nothing else running (20 min 23 s in a
# whole cold .ci/run, docs/harness.md), longer on a loaded machine; warm: well
# under a second.
# Progress and timings go to stderr.
set -euo pipefail
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

step() { # step VAR script: runs script, times it, records VAR=<its output>
  local var=$1 script=$2 t0 out
  t0=$(date +%s)
  out=$("$HACK/$script")
  printf 'e2e-assets.sh: %-28s %4ss  %s\n' "$script" "$(( $(date +%s) - t0 ))" "$out" >&2
  printf 'export %s=%q\n' "$var" "$out" >> "$ENV_OUT"
}

ENV_OUT=$(mktemp); trap 'rm -f "$ENV_OUT"' EXIT
step THROUGHLINE_REGISTRY_BIN registry.sh
printf 'export THROUGHLINE_HTPASSWD_BIN=%q\n' "$(command -v htpasswd)" >> "$ENV_OUT"
# Redis for Argo CD's repo-server and application controller: Debian's
# redis-server (hack/ci-e2e.sh installs it); the tests fail in CI without it.
if command -v redis-server >/dev/null; then
  printf 'export THROUGHLINE_REDIS_BIN=%q\n' "$(command -v redis-server)" >> "$ENV_OUT"
else
  echo "e2e-assets.sh: redis-server not installed (apt-get install -y redis-server)" >&2
fi
step THROUGHLINE_FLUX_CRDS flux-crds.sh
step THROUGHLINE_PROMETHEUS_CRDS prometheus-crds.sh
step KUBEBUILDER_ASSETS k8s-assets.sh
# kube-controller-manager, same version, own cache dir (internal/testenv.StartControllerManager).
step THROUGHLINE_KCM_BIN kube-controller-manager.sh
step THROUGHLINE_NC_DIR notification-controller.sh
step THROUGHLINE_ARGOCD_DIR argocd.sh

# Flux's source-controller and kustomize-controller (e2e/fluxcontrol).
step THROUGHLINE_FLUX_CONTROLLERS_DIR flux-controllers.sh

# Sigstore's cosign CLI (e2e/supplychain verifies the notifier's
# verification summaries with it).
step THROUGHLINE_COSIGN_BIN cosign.sh
# A private Sigstore: Fulcio, Rekor v2 (rekor-tiles, POSIX) and the
# timestamp authority (e2e/supplychain signs summaries keyless against them).
step THROUGHLINE_SIGSTORE_DIR sigstore.sh
# The CRDs of deploy/admission's policies (Kyverno, policy-controller) for e2e/admission.
step THROUGHLINE_ADMISSION_CRDS admission-crds.sh

cat "$ENV_OUT"
